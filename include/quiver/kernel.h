// quiver kernel language v1 (docs: README.md, "The kernel language"; docs/matrix.md, docs/numerics.md).
// Kernel sources include this header and stay ordinary C++20: stock Clang parses them (so
// clangd, clang-format and clang-tidy work); quiverc reads them with Clang LibTooling and
// compiles the annotated functions. The declarations below have no bodies on purpose: quiverc
// recognises each `qv::` builtin by name and lowers it for every target.
#pragma once

#include <cstdint>

#if defined(__clang__)
#define QV_ANNOTATE_(...) [[clang::annotate(__VA_ARGS__)]]
#else
#define QV_ANNOTATE_(...)
#endif

// A launchable kernel (returns void).
#define QV_KERNEL QV_ANNOTATE_("qv.kernel")
// The block (workgroup) shape, fixed at compile time: QV_BLOCK(x[, y[, z]]). Default 256.
#define QV_BLOCK(...) QV_ANNOTATE_("qv.block", __VA_ARGS__)
// A helper a kernel may call; always inlined into its callers.
#define QV_DEVICE QV_ANNOTATE_("qv.device") inline
// At least n blocks of this kernel should fit on one multiprocessor at once (the second argument
// of CUDA's __launch_bounds__): PTX passes it to ptxas (.minnctapersm), which then keeps the
// registers per thread low enough, spilling if it must. Other targets ignore it. 1 to 32.
#define QV_MIN_BLOCKS(n) QV_ANNOTATE_("qv.min_blocks", n)
// Limit a kernel to some targets: QV_TARGETS(ptx, cpu). Any of ptx hsaco spirv msl wgsl cpu.
#define QV_TARGETS(...) QV_ANNOTATE_("qv.targets", #__VA_ARGS__)

// A 32-bit integer kernel parameter whose value the target may compile into the kernel, placed
// before the parameter: `QV_SPECIALIZE uint32_t n`. On Vulkan it is a specialization constant and
// the runtime creates one pipeline per distinct set of such values (a bounded number per kernel;
// docs/runtime.md), which lets the driver see strides and loop bounds as constants; elsewhere it
// is an ordinary parameter. Meant for values that take few distinct values (a model's shapes).
#define QV_SPECIALIZE QV_ANNOTATE_("qv.specialize")

#define QV_BUILTIN_ QV_ANNOTATE_("qv.builtin")

namespace qv {

// ---- 16-bit floating-point storage types --------------------------------------------------------
// qv::half is IEEE binary16, qv::bf16 is bfloat16. They are storage types: convert explicitly,
// do the arithmetic in float. qv::half(x) / qv::bf16(x) round to nearest even (NaN stays NaN,
// overflow goes to infinity); static_cast<float>(h) is exact.
struct QV_ANNOTATE_("qv.scalar") half {
  half() = default;
  QV_BUILTIN_ explicit half(float x);
  QV_BUILTIN_ explicit operator float() const;

 private:
  uint16_t bits_;
};
struct QV_ANNOTATE_("qv.scalar") bf16 {
  bf16() = default;
  QV_BUILTIN_ explicit bf16(float x);
  QV_BUILTIN_ explicit operator float() const;

 private:
  uint16_t bits_;
};

// ---- Vectors ------------------------------------------------------------------------------------
// qv::vec<T, N> (N = 2, 4, 8): a value of N elements. v[i] takes a constant i. Element-wise
// + - * / for integer and float elements (a vec with a vec, or with one element value); half and
// bf16 vectors are storage only (convert the elements to float).
template <typename T, uint32_t N>
struct QV_ANNOTATE_("qv.vec") vec {
  static_assert(N == 2 || N == 4 || N == 8, "qv::vec<T, N> needs N = 2, 4 or 8");
  vec() = default;
  QV_BUILTIN_ explicit vec(T all);                 // every element = all
  QV_BUILTIN_ vec(T a, T b) requires(N == 2);
  QV_BUILTIN_ vec(T a, T b, T c, T d) requires(N == 4);
  QV_BUILTIN_ vec(T a, T b, T c, T d, T e, T f, T g, T h) requires(N == 8);
  QV_BUILTIN_ T& operator[](uint32_t i);
  QV_BUILTIN_ const T& operator[](uint32_t i) const;
  static constexpr uint32_t size() { return N; }

  QV_BUILTIN_ vec operator+(vec b) const;
  QV_BUILTIN_ vec operator-(vec b) const;
  QV_BUILTIN_ vec operator*(vec b) const;
  QV_BUILTIN_ vec operator/(vec b) const;
  QV_BUILTIN_ vec operator+(T b) const;
  QV_BUILTIN_ vec operator-(T b) const;
  QV_BUILTIN_ vec operator*(T b) const;
  QV_BUILTIN_ vec operator/(T b) const;
  QV_BUILTIN_ vec operator-() const;
  QV_BUILTIN_ vec& operator+=(vec b);
  QV_BUILTIN_ vec& operator-=(vec b);
  QV_BUILTIN_ vec& operator*=(vec b);
  QV_BUILTIN_ vec& operator/=(vec b);

 private:
  T elems_[N];
};
template <typename T, uint32_t N> QV_BUILTIN_ vec<T, N> operator*(T a, vec<T, N> b);
template <typename T, uint32_t N> QV_BUILTIN_ vec<T, N> operator+(T a, vec<T, N> b);

using float2 = vec<float, 2>;
using float4 = vec<float, 4>;
using half2 = vec<half, 2>;
using half4 = vec<half, 4>;
using half8 = vec<half, 8>;
using bf16x2 = vec<bf16, 2>;
using bf16x4 = vec<bf16, 4>;
using bf16x8 = vec<bf16, 8>;
using int4 = vec<int32_t, 4>;
using uint4 = vec<uint32_t, 4>;

// ---- Indices (all uint32_t) -------------------------------------------------------------
QV_BUILTIN_ uint32_t thread_id_x();
QV_BUILTIN_ uint32_t thread_id_y();
QV_BUILTIN_ uint32_t thread_id_z();
QV_BUILTIN_ uint32_t block_id_x();
QV_BUILTIN_ uint32_t block_id_y();
QV_BUILTIN_ uint32_t block_id_z();
QV_BUILTIN_ uint32_t block_dim_x();
QV_BUILTIN_ uint32_t block_dim_y();
QV_BUILTIN_ uint32_t block_dim_z();
QV_BUILTIN_ uint32_t grid_dim_x();
QV_BUILTIN_ uint32_t grid_dim_y();
QV_BUILTIN_ uint32_t grid_dim_z();
QV_BUILTIN_ uint32_t global_id_x();   // block_id * block_dim + thread_id
QV_BUILTIN_ uint32_t global_id_y();
QV_BUILTIN_ uint32_t global_id_z();

// ---- Memory -------------------------------------------------------------------------------
// Workgroup (shared) memory, one array per block: `qv::shared<float, 256> tile;`.
// Contents are undefined at kernel entry.
template <typename T, uint32_t N>
struct QV_ANNOTATE_("qv.shared") shared {
  QV_BUILTIN_ T& operator[](uint32_t i);
  QV_BUILTIN_ const T& operator[](uint32_t i) const;
  static constexpr uint32_t size() { return N; }
};

// Every thread of the block waits here; memory written before it by the block is visible
// after it. Must be reached by all threads of the block.
QV_BUILTIN_ void barrier();

// N consecutive elements starting at p, as one wide access where the target has it (16-byte
// ld.global.v4 on PTX). p must be aligned to N * sizeof(T).
template <uint32_t N, typename T> QV_BUILTIN_ vec<T, N> load(const T* p);
template <typename T, uint32_t N> QV_BUILTIN_ void store(T* p, vec<T, N> v);

// ---- Asynchronous copies into shared memory (docs/async_copy.md) -----------------------------
// copy_async(dst, src) copies 16 bytes (16 / sizeof(T) elements) from device memory at `src` to
// shared memory at `dst` (both 16-byte aligned), possibly in the background (cp.async on PTX;
// an ordinary copy elsewhere). copy_async_commit() closes this thread's current group of copies;
// copy_async_wait(n) returns once at most `n` (a constant) of this thread's committed groups are
// still in flight. Other threads see the copied data after a qv::barrier() that follows the wait.
template <typename T> QV_BUILTIN_ void copy_async(T* dst, const T* src);
QV_BUILTIN_ void copy_async_commit();
QV_BUILTIN_ void copy_async_wait(uint32_t n);

// ---- Overlapped launches (docs/abi.md "Overlapped launches") -------------------------------------
// Returns once the launches queued before this kernel have finished and their writes are
// visible. Every kernel waits so before its first instruction unless it calls this; one that
// calls it may read before the call only memory that no earlier launch of the queue writes
// (weights, tables), so those loads can overlap the end of the previous kernel. Each thread that
// reads an earlier launch's results must call it first. On CUDA sm_90+ it is griddepcontrol.wait
// and the runtime starts such kernels early; everywhere else launches do not overlap and the
// call does nothing.
QV_BUILTIN_ void wait_prior_launches();

// ---- Atomics on device or shared memory; each returns the old value ----------------------------
// The atomics order nothing but their own element. qv::device_fence orders the calling thread's
// device-memory accesses before it ahead of those after it, for every thread of the launch: the
// writer's stores, device_fence, then an atomic on a counter; the thread whose atomic sees the
// count complete calls device_fence, then reads what the others stored ("the last block to
// arrive", docs/abi.md). fence.acq_rel.gpu on PTX, OpMemoryBarrier at Device scope on SPIR-V, an
// agent-scope fence on HSACO, a fence on the CPU; WGSL has no device-scope fence and SPIRV-Cross
// no MSL one, so a kernel calling it does not build for the wgsl and msl targets (QV_TARGETS).
QV_BUILTIN_ void device_fence();

QV_BUILTIN_ int32_t atomic_add(int32_t* p, int32_t v);
QV_BUILTIN_ uint32_t atomic_add(uint32_t* p, uint32_t v);
QV_BUILTIN_ float atomic_add(float* p, float v);
QV_BUILTIN_ int32_t atomic_max(int32_t* p, int32_t v);
QV_BUILTIN_ uint32_t atomic_max(uint32_t* p, uint32_t v);
QV_BUILTIN_ int32_t atomic_min(int32_t* p, int32_t v);
QV_BUILTIN_ uint32_t atomic_min(uint32_t* p, uint32_t v);
QV_BUILTIN_ int32_t atomic_exchange(int32_t* p, int32_t v);
QV_BUILTIN_ uint32_t atomic_exchange(uint32_t* p, uint32_t v);
QV_BUILTIN_ float atomic_exchange(float* p, float v);
QV_BUILTIN_ uint32_t atomic_cas(uint32_t* p, uint32_t expected, uint32_t desired);

// ---- Subgroups (warp / wavefront / simdgroup / subgroup) ------------------------------------
// Kernels must be correct for any subgroup size from 1 to 128 (the CPU target uses 1). Where a
// block is not a whole number of subgroups, its last subgroup has only the lanes the block has:
// sum, max and min cover those; a shuffle or broadcast from a lane it lacks is undefined.
QV_BUILTIN_ uint32_t subgroup_size();
QV_BUILTIN_ uint32_t subgroup_lane();
#define QV_SUBGROUP_OPS_(T)                                        \
  QV_BUILTIN_ T subgroup_sum(T v);                                 \
  QV_BUILTIN_ T subgroup_max(T v);                                 \
  QV_BUILTIN_ T subgroup_min(T v);                                 \
  QV_BUILTIN_ T subgroup_shuffle(T v, uint32_t lane);              \
  QV_BUILTIN_ T subgroup_shuffle_xor(T v, uint32_t mask);          \
  QV_BUILTIN_ T subgroup_broadcast(T v, uint32_t lane);
QV_SUBGROUP_OPS_(float)
QV_SUBGROUP_OPS_(int32_t)
QV_SUBGROUP_OPS_(uint32_t)
#undef QV_SUBGROUP_OPS_

// ---- Math (float) -------------------------------------------------------------------------
QV_BUILTIN_ float exp(float x);
QV_BUILTIN_ float exp2(float x);
// exp2 where subnormal inputs and results may be flushed to zero (PTX: ex2.approx.ftz, three
// instructions fewer than exp2's subnormal-keeping form); the same bound on normal results.
QV_BUILTIN_ float exp2_ftz(float x);
// 1 / x within 1 ulp, where subnormal inputs and results may be flushed to zero (PTX:
// rcp.approx.ftz, one instruction instead of an IEEE division's range check and refinement);
// 1 / x elsewhere.
QV_BUILTIN_ float rcp(float x);
QV_BUILTIN_ float log(float x);
QV_BUILTIN_ float log2(float x);
QV_BUILTIN_ float sqrt(float x);
QV_BUILTIN_ float rsqrt(float x);
QV_BUILTIN_ float sin(float x);
QV_BUILTIN_ float cos(float x);
QV_BUILTIN_ float tanh(float x);
QV_BUILTIN_ float erf(float x);
QV_BUILTIN_ float pow(float x, float y);
QV_BUILTIN_ float abs(float x);
QV_BUILTIN_ float min(float a, float b);
QV_BUILTIN_ float max(float a, float b);
QV_BUILTIN_ float fma(float a, float b, float c);
QV_BUILTIN_ float floor(float x);
QV_BUILTIN_ float ceil(float x);
QV_BUILTIN_ float clamp(float x, float lo, float hi);
// Integer forms of the comparisons.
QV_BUILTIN_ int32_t abs(int32_t x);
QV_BUILTIN_ int32_t min(int32_t a, int32_t b);
QV_BUILTIN_ int32_t max(int32_t a, int32_t b);
QV_BUILTIN_ int32_t clamp(int32_t x, int32_t lo, int32_t hi);
QV_BUILTIN_ uint32_t min(uint32_t a, uint32_t b);
QV_BUILTIN_ uint32_t max(uint32_t a, uint32_t b);
QV_BUILTIN_ uint32_t clamp(uint32_t x, uint32_t lo, uint32_t hi);
// Packed int8x4 dot product with accumulate: acc + sum over k of int8(a >> 8k) * int8(b >> 8k).
QV_BUILTIN_ int32_t dot4_i8(uint32_t a, uint32_t b, int32_t acc);
// The bits of a scalar read as another of the same size, like std::bit_cast: 32 bits (float,
// int32_t, uint32_t) or 16 bits (half, bf16, int16_t, uint16_t). bit_cast<float>(0x4B000000u | n)
// is 2^23 + n exactly (n < 2^23), an int-to-float conversion on the full-rate ALUs, where
// static_cast<float> of an integer goes through a converter that issues at a quarter of the
// float rate on NVIDIA GPUs; bit_cast<half>(w) reads an f16 kept in integer memory.
template <typename To, typename From> QV_BUILTIN_ To bit_cast(From v);
// double on the targets that have it (CPU, PTX).
QV_BUILTIN_ double exp(double x);
QV_BUILTIN_ double log(double x);
QV_BUILTIN_ double sqrt(double x);
QV_BUILTIN_ double abs(double x);
QV_BUILTIN_ double min(double a, double b);
QV_BUILTIN_ double max(double a, double b);
QV_BUILTIN_ double fma(double a, double b, double c);

// ---- Matrix units: 16x16x16 tiles held by one subgroup (docs/matrix.md) ---------------------------
// C = A x B + C on 16 x 16 tiles, lowered to the target's matrix unit (PTX: mma.sync on tensor
// cores) or to a portable scalar fallback (docs/matrix.md lists which target does which). A tile
// is a value owned jointly by the threads of one subgroup: which thread holds which element is the
// target's business, so elements are not addressable. Every matrix builtin must be reached by all
// threads of the subgroup with the same arguments (uniform control flow, like barrier()).
// Memory operands point into a buffer or a qv::shared array; p must be 16-byte aligned and the
// stride (in elements) a multiple of 8. Inputs are half or bf16, the accumulator is float; products
// are exact and sums are done in at least float precision, in an order the target chooses.
// int8 tiles: inputs int8_t, K = 32 (A 16 x 32, B 32 x 16), the accumulator int32_t; products
// exact, sums in int32 (wrapping); the stride of an int8 tile is a multiple of 16.
inline constexpr uint32_t matrix_tile = 16;
// A: 16 rows (M) x 16 columns (K); for int8_t 16 x 32.
template <typename T>
struct QV_ANNOTATE_("qv.matrix_a") matrix_a {
  matrix_a() = default;   // all zero
 private:
  T elems_[256];
};
// B: 16 rows (K) x 16 columns (N); for int8_t 32 x 16.
template <typename T>
struct QV_ANNOTATE_("qv.matrix_b") matrix_b {
  matrix_b() = default;   // all zero
 private:
  T elems_[256];
};
// C: 16 x 16 float accumulators (int32_t for int8 products). Element-wise + - with another
// accumulator and * / by a T.
template <typename T>
struct QV_ANNOTATE_("qv.matrix_acc") matrix_acc {
  matrix_acc() = default;   // all zero
  QV_BUILTIN_ explicit matrix_acc(T all);
  // matrix_acc<float>(c) of a matrix_acc<int32_t>: each element as float (round to nearest even).
  template <typename U> QV_BUILTIN_ explicit matrix_acc(matrix_acc<U> c);
  QV_BUILTIN_ matrix_acc operator+(matrix_acc b) const;
  QV_BUILTIN_ matrix_acc operator-(matrix_acc b) const;
  QV_BUILTIN_ matrix_acc operator*(T s) const;
  QV_BUILTIN_ matrix_acc operator/(T s) const;
  QV_BUILTIN_ matrix_acc& operator+=(matrix_acc b);
  QV_BUILTIN_ matrix_acc& operator*=(T s);
  // Element-wise with another accumulator (row scales from qv::row_max / row_sum, masks).
  QV_BUILTIN_ matrix_acc operator*(matrix_acc b) const;
  QV_BUILTIN_ matrix_acc operator/(matrix_acc b) const;
  QV_BUILTIN_ matrix_acc& operator*=(matrix_acc b);

 private:
  T elems_[256];
};
// A[i][k] = p[i * stride + k].
template <typename T> QV_BUILTIN_ matrix_a<T> load_matrix_a(const T* p, uint32_t stride);
// B[k][j] = p[k * stride + j] (B stored row-major, K x N).
template <typename T> QV_BUILTIN_ matrix_b<T> load_matrix_b(const T* p, uint32_t stride);
// B[k][j] = p[j * stride + k] (B stored as its transpose, N x K: weights of x * W^T, keys of Q * K^T).
template <typename T> QV_BUILTIN_ matrix_b<T> load_matrix_b_transposed(const T* p, uint32_t stride);
// C[i][j] = p[i * stride + j].
QV_BUILTIN_ matrix_acc<float> load_matrix_acc(const float* p, uint32_t stride);
QV_BUILTIN_ matrix_acc<int32_t> load_matrix_acc(const int32_t* p, uint32_t stride);
// A x B + C.
template <typename T> QV_BUILTIN_ matrix_acc<float> mma(matrix_a<T> a, matrix_b<T> b, matrix_acc<float> c);
// 16 x 32 times 32 x 16 int8 values, exact products summed into int32 (wrapping).
QV_BUILTIN_ matrix_acc<int32_t> mma(matrix_a<int8_t> a, matrix_b<int8_t> b, matrix_acc<int32_t> c);
// p[i * stride + j] = T(C[i][j]) for T = float, half or bf16 (round to nearest even).
template <typename T> QV_BUILTIN_ void store_matrix(T* p, uint32_t stride, matrix_acc<float> c);
QV_BUILTIN_ void store_matrix(int32_t* p, uint32_t stride, matrix_acc<int32_t> c);
// Element-wise math on accumulators, with the scalar functions' results per element.
QV_BUILTIN_ matrix_acc<float> exp(matrix_acc<float> c);
QV_BUILTIN_ matrix_acc<float> exp2(matrix_acc<float> c);
QV_BUILTIN_ matrix_acc<float> exp2_ftz(matrix_acc<float> c);
QV_BUILTIN_ matrix_acc<float> max(matrix_acc<float> a, matrix_acc<float> b);
QV_BUILTIN_ matrix_acc<float> min(matrix_acc<float> a, matrix_acc<float> b);
// Row reductions, broadcast along the row: R[i][j] = max (sum) over j' of C[i][j'] — the running
// maximum and denominator of an online softmax live in such accumulators.
QV_BUILTIN_ matrix_acc<float> row_max(matrix_acc<float> c);
QV_BUILTIN_ matrix_acc<float> row_sum(matrix_acc<float> c);
// A[i][k] = T(C[i][k]) (round to nearest even): an accumulator becomes the left operand of the
// next product (attention's probabilities times V) without a trip through memory.
template <typename T> QV_BUILTIN_ matrix_a<T> to_matrix_a(matrix_acc<float> c);

// ---- Block tiles: M x N accumulators held by the whole block (docs/matrix.md "Block tiles") ------
// block_acc<float, M, N> is an M x N float accumulator owned jointly by every thread of the block
// (which thread holds which element is the target's business). block_mma<K> adds A x B, A (M x K)
// and B (K x N) read straight from memory (a buffer or a qv::shared array; the target stages them):
// on Vulkan devices with workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2) this is
// one cooperative product of the whole workgroup; elsewhere a portable fallback (each thread its
// share, M * N a multiple of the block's thread count). Every block builtin must be reached by
// all threads of the block with the same arguments (like barrier()); memory the block wrote
// before must be made visible with barrier() first. Inputs half or bf16, products exact, sums in
// float in an order the target chooses; or int8 inputs into block_acc<int32_t, M, N> (below).
// M, N: multiples of 16; K: a multiple of 16 (32 for int8).
template <typename T, uint32_t M, uint32_t N>
struct QV_ANNOTATE_("qv.block_acc") block_acc {
  block_acc() = default;   // all zero
  QV_BUILTIN_ explicit block_acc(T all);
  QV_BUILTIN_ block_acc operator+(block_acc b) const;
  QV_BUILTIN_ block_acc operator-(block_acc b) const;
  QV_BUILTIN_ block_acc operator*(T s) const;
  QV_BUILTIN_ block_acc operator/(T s) const;
  QV_BUILTIN_ block_acc& operator+=(block_acc b);
  QV_BUILTIN_ block_acc& operator*=(T s);

 private:
  T elems_[M * N];
};
// C + A B with A[i][k] = a[i * lda + k] and B[k][j] = b[k * ldb + j] (both row-major).
template <uint32_t K, typename T, uint32_t M, uint32_t N>
QV_BUILTIN_ block_acc<float, M, N> block_mma(const T* a, uint32_t lda, const T* b, uint32_t ldb, block_acc<float, M, N> c);
// C + A B with B given as its N x K transpose: B[k][j] = bt[j * ldbt + k] (a linear layer's weight).
template <uint32_t K, typename T, uint32_t M, uint32_t N>
QV_BUILTIN_ block_acc<float, M, N> block_mma_bt(const T* a, uint32_t lda, const T* bt, uint32_t ldbt,
                                                 block_acc<float, M, N> c);
// p[i * stride + j] = U(C[i][j]) for U = float, half or bf16 (round to nearest even).
template <typename U, uint32_t M, uint32_t N> QV_BUILTIN_ void store_block(U* p, uint32_t stride, block_acc<float, M, N> c);
// C[i][j] = p[i * stride + j]: an accumulator read back from a buffer or a qv::shared array (what
// store_block wrote there, after a barrier(), so the threads can work on it element by element).
template <uint32_t M, uint32_t N> QV_BUILTIN_ block_acc<float, M, N> load_block(const float* p, uint32_t stride);
template <uint32_t M, uint32_t N> QV_BUILTIN_ block_acc<int32_t, M, N> load_block(const int32_t* p, uint32_t stride);
// int8 products (K a multiple of 32): exact products summed into int32, wrapping; stored as int32.
template <uint32_t K, uint32_t M, uint32_t N>
QV_BUILTIN_ block_acc<int32_t, M, N> block_mma(const int8_t* a, uint32_t lda, const int8_t* b, uint32_t ldb,
                                               block_acc<int32_t, M, N> c);
template <uint32_t K, uint32_t M, uint32_t N>
QV_BUILTIN_ block_acc<int32_t, M, N> block_mma_bt(const int8_t* a, uint32_t lda, const int8_t* bt, uint32_t ldbt,
                                                  block_acc<int32_t, M, N> c);
template <uint32_t M, uint32_t N> QV_BUILTIN_ void store_block(int32_t* p, uint32_t stride, block_acc<int32_t, M, N> c);

// ---- Warpgroup products: 64 x N tiles of four subgroups (docs/matrix.md "Warpgroups") -----------
// A warpgroup is 128 consecutive linear thread ids starting at a multiple of 128 (the block must
// have a multiple of 128 threads). Its accumulator warpgroup_acc<float, N> is 64 x N floats
// (warpgroup_acc<int32_t, N> for int8 products), N = 16, 32, ... 256; warpgroup_mma multiplies
// A (64 x 16) by B (16 x N) out of shared memory (PTX sm_90a: one wgmma.mma_async; elsewhere a
// portable fallback). The operands live in
// swizzled panels: a panel is a run of 64-element rows (128 bytes for half / bf16) starting
// 1024-byte aligned (at a multiple of 512 elements into a qv::shared array, which quiver places
// 1024-byte aligned), and element (r, c) of a panel is at panel[swizzle128(r, c)]: the 16-byte
// chunk c / 8 of row r moves to chunk (c / 8) ^ (r % 8). Every warpgroup builtin must be reached
// by all 128 threads with the same arguments.
template <typename T, uint32_t N>
struct QV_ANNOTATE_("qv.warpgroup_acc") warpgroup_acc {
  warpgroup_acc() = default;   // all zero
  QV_BUILTIN_ explicit warpgroup_acc(T all);
  QV_BUILTIN_ warpgroup_acc operator+(warpgroup_acc b) const;
  QV_BUILTIN_ warpgroup_acc operator-(warpgroup_acc b) const;
  QV_BUILTIN_ warpgroup_acc operator*(T s) const;
  QV_BUILTIN_ warpgroup_acc operator/(T s) const;
  QV_BUILTIN_ warpgroup_acc& operator+=(warpgroup_acc b);
  QV_BUILTIN_ warpgroup_acc& operator*=(T s);
  // Element-wise with another accumulator (row scales from warpgroup_rows, masks).
  QV_BUILTIN_ warpgroup_acc operator*(warpgroup_acc b) const;
  QV_BUILTIN_ warpgroup_acc operator/(warpgroup_acc b) const;
  QV_BUILTIN_ warpgroup_acc& operator*=(warpgroup_acc b);

 private:
  T elems_[N / 2];   // a thread's share
};
// Element-wise math, with the scalar functions' results per element.
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> exp2(warpgroup_acc<float, N> c);
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> exp2_ftz(warpgroup_acc<float, N> c);
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> max(warpgroup_acc<float, N> a, warpgroup_acc<float, N> b);
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> min(warpgroup_acc<float, N> a, warpgroup_acc<float, N> b);
template <uint32_t N>
QV_BUILTIN_ warpgroup_acc<float, N> fma(warpgroup_acc<float, N> a, warpgroup_acc<float, N> b, warpgroup_acc<float, N> c);
// Where element (row, col) of a swizzled panel is (col < 64).
QV_DEVICE uint32_t swizzle128(uint32_t row, uint32_t col) {
  return row * 64 + ((((col >> 3) ^ row) & 7) << 3) + (col & 7);
}
// The same 128-byte geometry for elements of type T: a row holds 128 / sizeof(T) elements
// (int8_t: 128, col < 128) and a 16-byte chunk 16 / sizeof(T); chunk col / (16 / sizeof(T)) of
// row r sits at chunk (col / (16 / sizeof(T))) ^ (r % 8). swizzle128<half>(r, c) = swizzle128(r, c).
template <typename T>
QV_DEVICE uint32_t swizzle128(uint32_t row, uint32_t col) {
  return row * (128 / sizeof(T)) + (((col / (16 / sizeof(T))) ^ row) & 7) * (16 / sizeof(T)) + col % (16 / sizeof(T));
}
// C + A x B, started. A[i][k] is element (r0 + i, k0 + k) of the panel at `a` = panel + 64 r0 + k0
// (r0 a multiple of 8, k0 of 16). B (K x N, rows of N): B[k][j] is element (k0 + k, j % 64) of
// panel j / 64, panels `panel_stride` elements apart (a multiple of 512), `b` = panel 0 + 64 k0
// (k0 a multiple of 8). The result is ready, and the panels free to overwrite, after
// warpgroup_wait: until then nothing but warpgroup_mma may touch the accumulator.
template <typename T, uint32_t N>
QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_mma(const T* a, const T* b, uint32_t panel_stride, warpgroup_acc<float, N> c);
// The same with B given as its N x K transpose (weights of x * W^T, keys of Q * K^T): B[k][j] is
// element (n0 + j, k0 + k) of the panel at `bt` = panel + 64 n0 + k0 (n0 a multiple of 8, k0 of 16).
template <typename T, uint32_t N>
QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_mma_bt(const T* a, const T* bt, warpgroup_acc<float, N> c);
// int8 products (T = int8_t, accumulator warpgroup_acc<int32_t, N>): A (64 x 32) times B (32 x N),
// C + sum over k of A[i][k] * B[k][j], the products exact and the sums wrapping modulo 2^32 (as
// qv::dot4_i8). Panels of int8 rows are 128 elements (swizzle128<int8_t>); `a` = panel + 128 r0 + k0
// and `bt` = panel + 128 n0 + k0 (k0 a multiple of 32). B must be given N x K: Hopper's 8-bit
// products read only K-major operands, so quiverc rejects the K x N form (declared here only so
// that a kernel using it parses and gets quiverc's diagnostic).
template <uint32_t N>
QV_BUILTIN_ warpgroup_acc<int32_t, N> warpgroup_mma_bt(const int8_t* a, const int8_t* bt, warpgroup_acc<int32_t, N> c);
template <uint32_t N>
QV_BUILTIN_ warpgroup_acc<int32_t, N> warpgroup_mma(const int8_t* a, const int8_t* b, uint32_t panel_stride,
                                                    warpgroup_acc<int32_t, N> c);
// float(C[i][j]) per element, rounded to nearest even (exact while |C[i][j]| <= 2^24).
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_to_float(warpgroup_acc<int32_t, N> c);
// An accumulator whose element (i, j) is p[j] (j < N): per-column values such as a weight's
// scales, the counterpart of warpgroup_rows. p points into a buffer or a qv::shared array and
// is 8-byte aligned (the thread reads its columns as pairs).
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_cols(const float* p);
// barrier() for the calling warpgroup only: its 128 threads wait for each other, and their
// shared-memory writes before it are visible to the warpgroup (and its products) after it. Every
// warpgroup of the block must call it as often as the others (the portable fallback is barrier()).
QV_BUILTIN_ void warpgroup_barrier();
// Returns once at most `pending` (a constant, 0 to 7) of this warpgroup's batches of started
// products are unfinished; the products started since the last warpgroup_wait or
// warpgroup_commit form one batch.
QV_BUILTIN_ void warpgroup_wait(uint32_t pending);
// Closes the products started since the last warpgroup_wait or warpgroup_commit into a batch
// without waiting: work placed between it and a warpgroup_wait runs while they do (a batch
// closed right after its products is one the hardware tracks at once; PTX: wgmma.commit_group).
QV_BUILTIN_ void warpgroup_commit();
// p[i * stride + j] = T(C[i][j]) for T = float, half or bf16 (round to nearest even); stride even.
template <typename T, uint32_t N> QV_BUILTIN_ void store_warpgroup(T* p, uint32_t stride, warpgroup_acc<float, N> c);
// p[i * stride + j] = C[i][j] for an int32 accumulator (exact).
template <uint32_t N> QV_BUILTIN_ void store_warpgroup(int32_t* p, uint32_t stride, warpgroup_acc<int32_t, N> c);
// The part of C inside an edge: only the elements with i < rows and j < cols are written (any
// stride; one element at a time): a tile that overhangs the end of a matrix.
template <typename T, uint32_t N>
QV_BUILTIN_ void store_warpgroup(T* p, uint32_t stride, warpgroup_acc<float, N> c, uint32_t rows, uint32_t cols);
// C as T (half or bf16) into swizzled panels, the layout warpgroup_mma's A reads: C[i][j] is
// element (i, j % 64) of panel j / 64, panels `panel_stride` elements apart from the panel at p.
template <typename T, uint32_t N>
QV_BUILTIN_ void store_warpgroup_swizzled(T* p, uint32_t panel_stride, warpgroup_acc<float, N> c);
// A thread's share (the same on every target): with w = (linear thread id % 128) / 32, lane =
// linear id % 32, it holds rows 16w + lane / 4 and that + 8 ("its two rows"), columns
// 8i + 2 (lane % 4) + {0, 1} of each. The other columns of its rows are in the three threads whose
// linear ids differ from its own in bits 0 and 1 only. Online softmax is built from these:
// the max / sum over the thread's own elements of each of its two rows ...
template <uint32_t N> QV_BUILTIN_ vec<float, 2> warpgroup_row_max(warpgroup_acc<float, N> c);
template <uint32_t N> QV_BUILTIN_ vec<float, 2> warpgroup_row_sum(warpgroup_acc<float, N> c);
// ... an accumulator whose every element is the value of its row (rows[0] for the thread's first
// row, rows[1] for its second) ...
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_rows(vec<float, 2> rows);
// ... each element's own row (0 .. 63) and column (0 .. N - 1), as floats ...
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_row_index();
template <uint32_t N> QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_col_index();
// ... the thread's two rows (0 .. 63) ...
QV_BUILTIN_ vec<uint32_t, 2> warpgroup_thread_rows();
// ... and masks: C[i][j] becomes `fill` where j > last[h] (h: which of the thread's two rows i is;
// last may be negative). Compares with constants, where index accumulators would be N / 2 values
// a thread keeps.
template <uint32_t N>
QV_BUILTIN_ warpgroup_acc<float, N> warpgroup_mask_columns(warpgroup_acc<float, N> c, vec<int32_t, 2> last, float fill);

// ---- Block-wide reductions, written in the kernel language itself ----------------------------
// Every thread of the block gets the result; call from uniform control flow. Subgroups are
// the block's consecutive linear thread ids, as on every target quiver supports.
namespace detail {
QV_DEVICE uint32_t linear_thread_id() {
  return thread_id_x() + block_dim_x() * (thread_id_y() + block_dim_y() * thread_id_z());
}
template <typename T, bool MAX>
QV_DEVICE T block_reduce(T v) {
  // One slot per subgroup, 32 slots: more than 32 subgroups (subgroups smaller than the block
  // / 32, such as the CPU target's single invocations) fold into them modulo 32, one round of
  // 32 subgroups per barrier. A slot per possible subgroup (1024) took 4 KiB of workgroup memory
  // per call: 24 KiB for softmax, whose Vulkan version on the H100 then ran at 0.45 of CUDA's.
  shared<T, 32> partial;
  uint32_t tid = linear_thread_id();
  uint32_t threads = block_dim_x() * block_dim_y() * block_dim_z();
  uint32_t sg = subgroup_size();
  uint32_t groups = (threads + sg - 1) / sg;
  uint32_t group = tid / sg;
  T r = MAX ? subgroup_max(v) : subgroup_sum(v);
  bool leader = subgroup_lane() == 0;
  uint32_t rounds = (groups + 31) / 32;
  for (uint32_t k = 0; k < rounds; ++k) {   // uniform: every thread runs every round's barrier
    if (leader && group / 32 == k) {
      if (k == 0) {
        partial[group] = r;
      } else {
        T before = partial[group % 32];
        partial[group % 32] = MAX ? max(before, r) : before + r;
      }
    }
    barrier();
  }
  uint32_t used = groups < 32 ? groups : 32;
  T total;
  // Every subgroup has lanes 0 .. used - 1: the last one holds what is left of the block.
  if (used <= threads - (groups - 1) * sg) {   // uniform
    // The slots as one subgroup's values, combined by the subgroup operation (a tree): a walk
    // over 32 slots is 31 dependent workgroup-memory reads, most of a 1024-thread norm's time.
    uint32_t lane = subgroup_lane();
    T mine = lane < used ? partial[lane] : (MAX ? partial[0] : T(0));
    total = MAX ? subgroup_max(mine) : subgroup_sum(mine);
  } else {   // subgroups narrower than the slots in use (the CPU target's single invocations)
    total = partial[0];
    for (uint32_t i = 1; i < used; ++i) total = MAX ? max(total, partial[i]) : total + partial[i];
  }
  barrier();   // `partial` may be reused by the next call
  return total;
}
}  // namespace detail

template <typename T> QV_DEVICE T block_sum(T v) { return detail::block_reduce<T, false>(v); }
template <typename T> QV_DEVICE T block_max(T v) { return detail::block_reduce<T, true>(v); }

}  // namespace qv
