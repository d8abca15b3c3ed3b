// Helpers shared by the op library's kernels (kernels/*.cpp). Every op is a template over its
// element type T (float, qv::bf16, qv::half): loads go through to_f32, stores through
// from_f32<T>, and all arithmetic is done in float, as KERNEL_LANGUAGE.md asks of half/bf16.
// A new element type therefore needs only new explicit-instantiation lines in each op file.
#pragma once

#include <quiver/kernel.h>

#include "launch_shapes.h"

namespace qvops {

// Threads per block of the row-wise ops (one block per row, strided loops over the columns).
constexpr uint32_t kRowThreads = 256;
// Threads per block of the element-wise ops (grid-stride loops).
constexpr uint32_t kElemThreads = 256;
// The most negative finite float: the start of a running maximum, and the marker of masked
// attention scores (a finite sentinel keeps exp(m_old - m_new) well defined while a whole row
// is still masked).
constexpr float kLowest = -3.40282347e38f;

// e^x as 2^(x log2 e): on PTX qv::exp2 is the special-function unit's ex2.approx (docs/numerics.md),
// a fifth of the portable exp's instructions, which bounds the bf16 softmax / gelu / silu kernels
// (compute-bound at half the bytes per element). Rounding x log2 e adds |x| 2^-24 relative error:
// at most 2^-24 / e of the largest term for the x <= 0 of a max-shifted softmax.
QV_DEVICE float exp_by_exp2(float x) { return qv::exp2(x * 1.44269504f); }

template <typename T>
QV_DEVICE float to_f32(T v) {
  return static_cast<float>(v);
}
template <typename T>
QV_DEVICE T from_f32(float v) {
  return static_cast<T>(v);   // round to nearest even for half / bf16
}

// ---- Wide access for the memory-bound ops ----------------------------------------------------
// Four consecutive elements move as one access (16 bytes of float, 8 of half / bf16) and are
// worked on as a float4; scalar element accesses leave most of the memory system's width unused.
// `p` must be aligned to 4 elements: buffers start aligned, so row starts are whenever
// cols % 4 == 0 and grid-stride chunks of 4 always are.
// Elements of T as floats: four, or the first / last four of eight.
template <typename T>
QV_DEVICE qv::float4 to_float4(qv::vec<T, 4> v) {
  return qv::float4(to_f32(v[0]), to_f32(v[1]), to_f32(v[2]), to_f32(v[3]));
}
template <typename T>
QV_DEVICE qv::float4 to_float4_lo(qv::vec<T, 8> v) {
  return qv::float4(to_f32(v[0]), to_f32(v[1]), to_f32(v[2]), to_f32(v[3]));
}
template <typename T>
QV_DEVICE qv::float4 to_float4_hi(qv::vec<T, 8> v) {
  return qv::float4(to_f32(v[4]), to_f32(v[5]), to_f32(v[6]), to_f32(v[7]));
}
template <typename T>
QV_DEVICE qv::float4 load4(const T* p) {
  return to_float4(qv::load<4>(p));
}
template <typename T>
QV_DEVICE void store4(T* p, qv::float4 v) {
  qv::store(p, qv::vec<T, 4>(from_f32<T>(v[0]), from_f32<T>(v[1]), from_f32<T>(v[2]), from_f32<T>(v[3])));
}
// Row code written once for W = 4 (load4 / store4) and W = 1 (one element in lane 0, zeros in
// the others) serves rows of any length: the kernel picks W = 4 when cols % 4 == 0.
template <uint32_t W, typename T>
QV_DEVICE qv::float4 load_w(const T* p) {
  if constexpr (W == 4) {
    return load4(p);
  } else {
    return qv::float4(to_f32(p[0]), 0.0f, 0.0f, 0.0f);
  }
}
template <uint32_t W, typename T>
QV_DEVICE void store_w(T* p, qv::float4 v) {
  if constexpr (W == 4) {
    store4(p, v);
  } else {
    p[0] = from_f32<T>(v[0]);
  }
}
QV_DEVICE float sum4(qv::float4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }
QV_DEVICE qv::float4 fma4(qv::float4 a, qv::float4 b, qv::float4 c) {   // a * b + c, one rounding each
  return qv::float4(qv::fma(a[0], b[0], c[0]), qv::fma(a[1], b[1], c[1]), qv::fma(a[2], b[2], c[2]),
                    qv::fma(a[3], b[3], c[3]));
}

// 8-float vectors for the CPU target's own kernels (matmul_cpu.cpp, rows_cpu.cpp): element-wise
// scalar operations that LLVM's SLP vectoriser makes one vector instruction (the language has no
// vector fma, and the CPU target contracts nothing); load8 / store8 from element accesses, so any
// 4-byte alignment (qv::load<8> requires 32 bytes).
using F8 = qv::vec<float, 8>;
QV_DEVICE F8 fma8(F8 a, F8 b, F8 c) {
  return F8(qv::fma(a[0], b[0], c[0]), qv::fma(a[1], b[1], c[1]), qv::fma(a[2], b[2], c[2]), qv::fma(a[3], b[3], c[3]),
            qv::fma(a[4], b[4], c[4]), qv::fma(a[5], b[5], c[5]), qv::fma(a[6], b[6], c[6]), qv::fma(a[7], b[7], c[7]));
}
QV_DEVICE float sum8(F8 v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
QV_DEVICE F8 load8(const float* p) { return F8(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]); }
QV_DEVICE void store8(float* p, F8 v) {
  p[0] = v[0], p[1] = v[1], p[2] = v[2], p[3] = v[3], p[4] = v[4], p[5] = v[5], p[6] = v[6], p[7] = v[7];
}

// ---- 16-byte chunks for the element-wise ops -------------------------------------------------
// One access of 16 bytes: 4 float or 8 half / bf16 elements, worked on as one or two float4
// (`hi` is unused for float). Half-width 8-byte accesses left a single-input 16-bit op with too
// few bytes in flight per thread: gelu bf16 reached 55% of copy on the H100 where gelu f32 (16
// bytes per access) reached 98%. `p` must be aligned to 16 bytes.
template <typename T>
constexpr uint32_t chunk_elems() {
  return sizeof(T) == 2 ? 8 : 4;
}
template <typename T>
QV_DEVICE void load16(const T* p, qv::float4& lo, qv::float4& hi) {
  if constexpr (chunk_elems<T>() == 8) {
    qv::vec<T, 8> v = qv::load<8>(p);
    lo = to_float4_lo(v);
    hi = to_float4_hi(v);
  } else {
    lo = load4(p);
  }
}
template <typename T>
QV_DEVICE void store16(T* p, qv::float4 lo, qv::float4 hi) {
  if constexpr (chunk_elems<T>() == 8) {
    qv::store(p, qv::vec<T, 8>(from_f32<T>(lo[0]), from_f32<T>(lo[1]), from_f32<T>(lo[2]), from_f32<T>(lo[3]),
                               from_f32<T>(hi[0]), from_f32<T>(hi[1]), from_f32<T>(hi[2]), from_f32<T>(hi[3])));
  } else {
    store4(p, lo);
  }
}

// ---- Rows kept in registers (the block-per-row ops) -------------------------------------------
// Rows of at most kCachedCols elements that start on 16-byte boundaries (row_cached) are read
// once: each thread keeps four float4 slots in registers (v0..v3: the language has no local
// arrays) across the block reductions. Re-reading the row after a reduction's barrier left
// rms_norm f32 latency-bound on the H100 (ncu: DRAM 77.5%, SM 22%). Every access is 16 bytes:
// slot k of a float row is the chunk at element (k kRowThreads + t) 4; slots 2j and 2j + 1 of a
// half / bf16 row are the halves of the chunk at (j kRowThreads + t) 8. (8-byte slots left the
// bf16 rows at 0.73-0.84 of CUDA on Vulkan where the float rows reached 0.95-0.99.)
constexpr uint32_t kCachedCols = kRowThreads * 4 * 4;   // 4096
template <typename T>
QV_DEVICE bool row_cached(uint32_t cols) {
  return cols % chunk_elems<T>() == 0 && cols <= kCachedCols;
}
// First element of slot k of this thread.
template <typename T>
QV_DEVICE uint32_t row_slot_col(uint32_t k) {
  if constexpr (chunk_elems<T>() == 8) return ((k / 2) * kRowThreads + qv::thread_id_x()) * 8 + (k % 2) * 4;
  else return (k * kRowThreads + qv::thread_id_x()) * 4;
}
// Whether slot k of this thread holds data (row_cached rows: a chunk is all in or all out).
template <typename T>
QV_DEVICE bool row_slot_in(uint32_t cols, uint32_t k) {
  return row_slot_col<T>(k) < cols;
}
// Slots 2j and 2j + 1 of this thread (j = 0, 1); `fill` past the row's end. Working a pair at a
// time keeps what is live small: loading every operand's four slots first (w and b of
// layer_norm, the residual of add_rms_norm) put add_rms_norm f32 32768 x 4096 on Vulkan at 0.55
// of CUDA instead of 0.97.
template <typename T>
QV_DEVICE void row_pair_load(const T* row, uint32_t cols, uint32_t j, float fill, qv::float4& a, qv::float4& b) {
  a = b = qv::float4(fill);
  if constexpr (chunk_elems<T>() == 8) {
    if (row_slot_in<T>(cols, 2 * j)) load16(row + row_slot_col<T>(2 * j), a, b);
  } else {
    if (row_slot_in<T>(cols, 2 * j)) a = load4(row + row_slot_col<T>(2 * j));
    if (row_slot_in<T>(cols, 2 * j + 1)) b = load4(row + row_slot_col<T>(2 * j + 1));
  }
}
template <typename T>
QV_DEVICE void row_pair_store(T* row, uint32_t cols, uint32_t j, qv::float4 a, qv::float4 b) {
  if constexpr (chunk_elems<T>() == 8) {
    if (row_slot_in<T>(cols, 2 * j)) store16(row + row_slot_col<T>(2 * j), a, b);
  } else {
    if (row_slot_in<T>(cols, 2 * j)) store4(row + row_slot_col<T>(2 * j), a);
    if (row_slot_in<T>(cols, 2 * j + 1)) store4(row + row_slot_col<T>(2 * j + 1), b);
  }
}
// All four slots of this thread.
template <typename T>
QV_DEVICE void row_load(const T* row, uint32_t cols, float fill, qv::float4& v0, qv::float4& v1, qv::float4& v2,
                        qv::float4& v3) {
  row_pair_load(row, cols, 0, fill, v0, v1);
  row_pair_load(row, cols, 1, fill, v2, v3);
}
template <typename T>
QV_DEVICE void row_store(T* row, uint32_t cols, qv::float4 v0, qv::float4 v1, qv::float4 v2, qv::float4 v3) {
  row_pair_store(row, cols, 0, v0, v1);
  row_pair_store(row, cols, 1, v2, v3);
}

// Sum and maximum of a 16-byte chunk's elements (lo, and hi for 16-bit T).
template <typename T>
QV_DEVICE float chunk_sum(qv::float4 lo, qv::float4 hi) {
  if constexpr (chunk_elems<T>() == 8) return sum4(lo) + sum4(hi);
  else return sum4(lo);
}
QV_DEVICE float max4(qv::float4 v) { return qv::max(qv::max(v[0], v[1]), qv::max(v[2], v[3])); }
template <typename T>
QV_DEVICE float chunk_max(qv::float4 lo, qv::float4 hi) {
  if constexpr (chunk_elems<T>() == 8) return qv::max(max4(lo), max4(hi));
  else return max4(lo);
}

// The row a row-wise block works on. The host splits more than 65535 rows over grid.y
// (Vulkan guarantees only 65535 blocks per grid dimension), so the last blocks may be spare.
QV_DEVICE uint32_t block_row() { return qv::block_id_x() + qv::block_id_y() * qv::grid_dim_x(); }

// One BM x BN tile of C = A B (B given K x N), or A B^T (BT: B given N x K), at the block's grid
// position (x: columns, y: rows), K in steps of BK, on block tiles (docs/matrix.md "Block
// tiles"): whole tiles only. Acc is float for half operands, int32_t for int8 ones.
template <uint32_t BM, uint32_t BN, uint32_t BK, bool BT, typename Acc, typename T, typename U>
QV_DEVICE void block_matmul_tile(const T* a, const T* b, U* c, uint32_t n, uint32_t k) {
  uint32_t row0 = qv::block_id_y() * BM, col0 = qv::block_id_x() * BN;
  qv::block_acc<Acc, BM, BN> acc;
  for (uint32_t k0 = 0; k0 < k; k0 += BK) {
    if constexpr (BT) acc = qv::block_mma_bt<BK>(a + row0 * k + k0, k, b + col0 * k + k0, k, acc);
    else acc = qv::block_mma<BK>(a + row0 * k + k0, k, b + k0 * n + col0, n, acc);
  }
  qv::store_block(c + row0 * n + col0, n, acc);
}

// First element and stride of a grid-stride loop over a 1-D grid.
QV_DEVICE uint32_t grid_first() { return qv::global_id_x(); }
QV_DEVICE uint32_t grid_stride() { return qv::grid_dim_x() * qv::block_dim_x(); }

// ---- Short rows: a subgroup per row ------------------------------------------------------------
// A row of at most 1024 elements is at most 4 KB of float: a 256-thread block per row spends
// more time in its block reductions (barriers) and in the wave it waits for than in moving the
// row (4096 x 1024 on the H100: softmax bf16 0.56, layer_norm bf16 0.69 of Triton / torch). Such
// rows, when they start on 16-byte boundaries (cols % chunk_elems<T>() == 0), go to the `_short`
// kernels (rms_norm_short, layer_norm_short, softmax_short, log_softmax_short): one row per
// subgroup, kShortRows per block, subgroup reductions only. runtime/ops/ops.cpp picks them by
// that rule and launches ceil(rows / kShortRows) blocks; they need it (16-byte accesses).
// A row that fits the subgroup's registers is read once (short_row_load below); a longer one is
// walked once per pass (the later passes hit the cache).
constexpr uint32_t kShortRows = 8;
// Subgroup s of the block takes the block's rows s, s + subgroups, ...: the step count is
// block-uniform, so subgroup operations stay in uniform control flow (a subgroup past the
// block's rows reduces zeros).
QV_DEVICE uint32_t short_row_steps() {
  uint32_t subgroups = (kRowThreads + qv::subgroup_size() - 1) / qv::subgroup_size();
  return (kShortRows + subgroups - 1) / subgroups;
}
// This subgroup's row at `step`; `valid` says whether it is one of the block's and the matrix's.
QV_DEVICE uint32_t short_row(uint32_t step, uint32_t rows, bool& valid) {
  uint32_t sg = qv::subgroup_size();
  uint32_t k = qv::thread_id_x() / sg + step * ((kRowThreads + sg - 1) / sg);
  uint32_t row = block_row() * kShortRows + k;
  valid = k < kShortRows && row < rows;
  return row;
}

// A short row of at most 32 subgroup_size() elements, held in registers by its subgroup: eight
// float4 slots per lane, slot k = chunk k (float) or half of chunk k / 2 (half / bf16, 16-byte
// chunks of 8), chunk j of lane l at elements (j sg + l) * chunk_elems<T>(). Slots past the row's
// end hold `fill`. (One read of the row; the loop form re-reads it once per pass.)
QV_DEVICE bool short_row_fits(uint32_t cols) { return cols <= 32 * qv::subgroup_size(); }
template <typename T>
QV_DEVICE void short_chunk_load(const T* row, uint32_t cols, uint32_t j, float fill, qv::float4& lo, qv::float4& hi) {
  uint32_t c = (j * qv::subgroup_size() + qv::subgroup_lane()) * chunk_elems<T>();
  lo = qv::float4(fill);
  hi = qv::float4(fill);
  if (c < cols) load16(row + c, lo, hi);
}
template <typename T>
QV_DEVICE void short_chunk_store(T* row, uint32_t cols, uint32_t j, qv::float4 lo, qv::float4 hi) {
  uint32_t c = (j * qv::subgroup_size() + qv::subgroup_lane()) * chunk_elems<T>();
  if (c < cols) store16(row + c, lo, hi);
}
template <typename T>
QV_DEVICE void short_row_load(const T* row, uint32_t cols, float fill, qv::float4& v0, qv::float4& v1, qv::float4& v2,
                              qv::float4& v3, qv::float4& v4, qv::float4& v5, qv::float4& v6, qv::float4& v7) {
  if constexpr (chunk_elems<T>() == 8) {
    short_chunk_load(row, cols, 0, fill, v0, v1);
    short_chunk_load(row, cols, 1, fill, v2, v3);
    short_chunk_load(row, cols, 2, fill, v4, v5);
    short_chunk_load(row, cols, 3, fill, v6, v7);
  } else {
    qv::float4 unused;
    short_chunk_load(row, cols, 0, fill, v0, unused);
    short_chunk_load(row, cols, 1, fill, v1, unused);
    short_chunk_load(row, cols, 2, fill, v2, unused);
    short_chunk_load(row, cols, 3, fill, v3, unused);
    short_chunk_load(row, cols, 4, fill, v4, unused);
    short_chunk_load(row, cols, 5, fill, v5, unused);
    short_chunk_load(row, cols, 6, fill, v6, unused);
    short_chunk_load(row, cols, 7, fill, v7, unused);
  }
}
template <typename T>
QV_DEVICE void short_row_store(T* row, uint32_t cols, qv::float4 v0, qv::float4 v1, qv::float4 v2, qv::float4 v3,
                               qv::float4 v4, qv::float4 v5, qv::float4 v6, qv::float4 v7) {
  if constexpr (chunk_elems<T>() == 8) {
    short_chunk_store(row, cols, 0, v0, v1);
    short_chunk_store(row, cols, 1, v2, v3);
    short_chunk_store(row, cols, 2, v4, v5);
    short_chunk_store(row, cols, 3, v6, v7);
  } else {
    short_chunk_store(row, cols, 0, v0, v0);
    short_chunk_store(row, cols, 1, v1, v1);
    short_chunk_store(row, cols, 2, v2, v2);
    short_chunk_store(row, cols, 3, v3, v3);
    short_chunk_store(row, cols, 4, v4, v4);
    short_chunk_store(row, cols, 5, v5, v5);
    short_chunk_store(row, cols, 6, v6, v6);
    short_chunk_store(row, cols, 7, v7, v7);
  }
}

// sin and cos of x for |x| < 2^16 * pi / 2 (rope angles reach 10^5 rad in long contexts). The
// angle is reduced by quarter turns k = round(x * 2 / pi) with pi / 2 split into pieces of at most
// 8 significant bits, so every k * piece is exact in float for k < 2^16 whether or not the driver
// fuses the multiply-subtract. On |r| <= pi / 4 (+ an ulp) the Taylor series to r^9 / r^10 are
// within 2e-9 of sin / cos (the next terms: (pi/4)^11 / 11!, (pi/4)^12 / 12!), evaluated with
// fused steps. (qv::sin / qv::cos of r, each with its own range reduction, held rope bf16 at
// 0.89 of copy on the H100: 60 registers, half occupancy. qv::sin on lavapipe loses ~1e-4
// absolute at |x| = 4096, hence the reduction here.)
QV_DEVICE void sin_cos(float x, float& s, float& c) {
  float k = qv::floor(x * 0.636619772367581343f + 0.5f);
  float r = x - k * 1.5703125f;                    // pi / 2 = 1.5703125
  r = r - k * 4.825592041015625e-4f;               //       + 0x1.fap-12
  r = r - k * 1.2665987014770508e-6f;              //       + 0x1.54p-20
  r = r - k * 9.92093629470503e-10f;               //       + the rest, rounded (error 5e-17)
  float z = r * r;
  float sp = qv::fma(z, qv::fma(z, qv::fma(z, 2.75573192239858907e-6f, -1.98412698412698413e-4f), 8.33333333333333333e-3f),
                     -1.66666666666666667e-1f);   // (sin r - r) / r^3: -1/3! + z / 5! - z^2 / 7! + z^3 / 9!
  float sr = qv::fma(r * z, sp, r);
  float cp = qv::fma(z, qv::fma(z, qv::fma(z, qv::fma(z, -2.75573192239858907e-7f, 2.48015873015873016e-5f),
                                           -1.38888888888888889e-3f),
                                4.16666666666666667e-2f),
                     -0.5f);                        // (cos r - 1) / r^2: -1/2! + z / 4! - ... - z^4 / 10!
  float cr = qv::fma(z, cp, 1.0f);
  int32_t quadrant = static_cast<int32_t>(k) & 3;  // two's complement: right for negative k too
  s = quadrant == 0 ? sr : quadrant == 1 ? cr : quadrant == 2 ? -sr : -cr;
  c = quadrant == 0 ? cr : quadrant == 1 ? -sr : quadrant == 2 ? -cr : sr;
}

// The pair (a, b) rotated by the angle whose sine and cosine are s and c (rope's rotation).
QV_DEVICE void rotate_pair(float a, float b, float s, float c, float& ra, float& rb) {
  ra = a * c - b * s;
  rb = b * c + a * s;
}

// c_i0 += A_i B_0 and c_i1 += A_i B_1 for the four A tiles at a0, a0 + 16 row, ... of `as` (rows
// `row` elements apart): one step of a warp's 64 x 32 block in the matrix-unit matmuls
// (kernels/matmul_tiles.cpp, kernels/matmul_w8a8_tiles.cpp). One A tile lives at a time.
template <typename T, uint32_t N, typename Acc>
QV_DEVICE void mma_4x2(const qv::shared<T, N>& as, uint32_t a0, uint32_t row, const qv::matrix_b<T>& b_0,
                       const qv::matrix_b<T>& b_1, Acc& c00, Acc& c01, Acc& c10, Acc& c11, Acc& c20, Acc& c21,
                       Acc& c30, Acc& c31) {
  qv::matrix_a<T> a = qv::load_matrix_a(&as[a0], row);
  c00 = qv::mma(a, b_0, c00);
  c01 = qv::mma(a, b_1, c01);
  a = qv::load_matrix_a(&as[a0 + 16 * row], row);
  c10 = qv::mma(a, b_0, c10);
  c11 = qv::mma(a, b_1, c11);
  a = qv::load_matrix_a(&as[a0 + 32 * row], row);
  c20 = qv::mma(a, b_0, c20);
  c21 = qv::mma(a, b_1, c21);
  a = qv::load_matrix_a(&as[a0 + 48 * row], row);
  c30 = qv::mma(a, b_0, c30);
  c31 = qv::mma(a, b_1, c31);
}

// ---- Quantized matvecs (kernels/matvec.cpp, matvec_k_a8.cpp) --------------------------------------
// Blocks of kQuantThreads threads compute kQuantRows outputs, a subgroup two rows at a time
// (launch_shapes.h; runtime/ops/ops.cpp sizes the grid by the same constants).

// The walk over row pairs: step `step` (of pair_steps) of a block's subgroup takes rows row0
// and row0 + 1 of its kQuantRows (row1 = row0 again when that is past the end: the absent row
// re-reads row 0). The step count is block-uniform and store_pair's subgroup sums sit outside
// any thread-dependent branch, as WGSL's uniformity analysis requires; a subgroup without rows
// adds zeros.
QV_DEVICE uint32_t pair_steps(uint32_t sg) {
  uint32_t subgroups = (kQuantThreads + sg - 1) / sg;
  return (kQuantRows + 2 * subgroups - 1) / (2 * subgroups);
}
QV_DEVICE uint32_t pair_row(uint32_t step, uint32_t sg, uint32_t rows, bool& valid0, bool& valid1, uint32_t& row1) {
  uint32_t pair = qv::thread_id_x() / sg + step * ((kQuantThreads + sg - 1) / sg);
  uint32_t row0 = block_row() * kQuantRows + 2 * pair;
  valid0 = 2 * pair < kQuantRows && row0 < rows;
  valid1 = valid0 && row0 + 1 < rows;
  row1 = valid1 ? row0 + 1 : row0;
  return row0;
}
QV_DEVICE void store_pair(float* y, uint32_t row0, bool valid0, bool valid1, float a0, float a1) {
  float sum0 = qv::subgroup_sum(a0), sum1 = qv::subgroup_sum(a1);
  if (valid0 && qv::subgroup_lane() == 0) y[row0] = sum0;
  if (valid1 && qv::subgroup_lane() == 0) y[row0 + 1] = sum1;
}

// The `_rows4` walk of the int8-activation products of many rows: a subgroup takes four rows,
// a block kQuadRows. A q4 row pair reads as many activation bytes (from L1) as weight bytes (from
// DRAM); four rows a subgroup share one load of the activations among four rows' weight loads.
// Rows past the end re-read the quad's first row (r1..r3 = r0) and are not stored; a quad past
// the end adds zeros. Uniformity as pair_row.
QV_DEVICE uint32_t quad_steps(uint32_t sg) {
  uint32_t subgroups = (kQuantThreads + sg - 1) / sg;
  return (kQuadRows + 4 * subgroups - 1) / (4 * subgroups);
}
QV_DEVICE uint32_t quad_row(uint32_t step, uint32_t sg, uint32_t rows, bool& valid, uint32_t& r1, uint32_t& r2,
                            uint32_t& r3) {
  uint32_t quad = qv::thread_id_x() / sg + step * ((kQuantThreads + sg - 1) / sg);
  uint32_t r0 = block_row() * kQuadRows + 4 * quad;
  valid = 4 * quad < kQuadRows && r0 < rows;
  r1 = r0 + 1 < rows ? r0 + 1 : r0;
  r2 = r0 + 2 < rows ? r0 + 2 : r0;
  r3 = r0 + 3 < rows ? r0 + 3 : r0;
  return r0;
}
QV_DEVICE void store_quad(float* y, uint32_t r0, bool valid, uint32_t rows, float a0, float a1, float a2, float a3) {
  float s0 = qv::subgroup_sum(a0), s1 = qv::subgroup_sum(a1), s2 = qv::subgroup_sum(a2), s3 = qv::subgroup_sum(a3);
  if (valid && qv::subgroup_lane() == 0) {
    y[r0] = s0;
    if (r0 + 1 < rows) y[r0 + 1] = s1;
    if (r0 + 2 < rows) y[r0 + 2] = s2;
    if (r0 + 3 < rows) y[r0 + 3] = s3;
  }
}

// The int8-activation products' walk (kernels/matvec.cpp's *_a8, matvec_k_a8.cpp): a block of
// kQuantThreads threads takes P row pairs, the grid rows / (2 P) blocks. P = kQuantRows / 2 is
// the plain walk above (pair_row: subgroups beyond the pairs idle). P < kQuantRows / 2 is the
// `_split` kernels': the block's subgroups take min(P, subgroups) pairs a step, and where it
// has more subgroups than that, `parts` subgroups share a pair, each walking its own share of the
// row (split_range), their sums meeting in workgroup memory (split_store; always through it,
// so that every image of a split kernel declares the workgroup memory the manifest counts). A
// 4096-row product at 4 pairs a block is 512 blocks, under half of what an H200's
// multiprocessors hold, and most of the memory requests it could have in flight are not. P is a
// template argument so that a kernel's walk folds to constants where the subgroup size is one
// (a run-time P cost the 4-pair kernels 5-10% on an H200). Subgroup counts are powers of two.
template <uint32_t P>
QV_DEVICE uint32_t split_per_step(uint32_t sg) {
  uint32_t subgroups = (kQuantThreads + sg - 1) / sg;
  return subgroups < P ? subgroups : P;
}
template <uint32_t P>
QV_DEVICE uint32_t split_steps(uint32_t sg) {
  if constexpr (2 * P == kQuantRows) return pair_steps(sg);
  return P / split_per_step<P>(sg);
}
template <uint32_t P>
QV_DEVICE uint32_t split_parts(uint32_t sg) {
  return ((kQuantThreads + sg - 1) / sg) / split_per_step<P>(sg);
}
// This subgroup's share [begin, end) of a row's n steps (chunks, super-blocks).
template <uint32_t P>
QV_DEVICE void split_range(uint32_t n, uint32_t sg, uint32_t& begin, uint32_t& end) {
  if constexpr (2 * P == kQuantRows) {
    begin = 0;
    end = n;
  } else {
    uint32_t parts = split_parts<P>(sg), part = (qv::thread_id_x() / sg) / split_per_step<P>(sg);
    begin = n * part / parts;
    end = n * (part + 1) / parts;
  }
}
// As pair_row: rows row0 and row1 (= row0 when row0 + 1 is past the end) of step `step`.
template <uint32_t P>
QV_DEVICE uint32_t split_row(uint32_t step, uint32_t sg, uint32_t rows, bool& valid0, bool& valid1, uint32_t& row1) {
  if constexpr (2 * P == kQuantRows) return pair_row(step, sg, rows, valid0, valid1, row1);
  uint32_t per_step = split_per_step<P>(sg);
  uint32_t row0 = block_row() * 2 * P + 2 * ((qv::thread_id_x() / sg) % per_step + step * per_step);
  valid0 = row0 < rows;
  valid1 = valid0 && row0 + 1 < rows;
  row1 = valid1 ? row0 + 1 : row0;
  return row0;
}
// Step `step`'s pair sums: stored by the subgroup (the plain walk) or added over the parts in a
// fixed order. Called by every thread of the block (the barriers), outside any thread-dependent
// branch.
template <uint32_t P>
QV_DEVICE void split_store(float* y, uint32_t row0, bool valid0, bool valid1, float a0, float a1, uint32_t sg,
                           uint32_t rows, uint32_t step) {
  if constexpr (2 * P == kQuantRows) {
    store_pair(y, row0, valid0, valid1, a0, a1);
  } else {
    float sum0 = qv::subgroup_sum(a0), sum1 = qv::subgroup_sum(a1);
    qv::shared<float, 2 * kQuantThreads> partial;   // two sums a subgroup, even of size 1
    uint32_t t = qv::thread_id_x(), g = t / sg, per_step = split_per_step<P>(sg), parts = split_parts<P>(sg);
    if (qv::subgroup_lane() == 0) {
      partial[2 * g] = sum0;
      partial[2 * g + 1] = sum1;
    }
    qv::barrier();
    uint32_t row = block_row() * 2 * P + 2 * step * per_step + t;   // thread t < 2 per_step: the step's row t
    if (t < 2 * per_step && row < rows) {
      float s = 0.0f;
      for (uint32_t p = 0; p < parts; ++p) s += partial[2 * (t / 2 + p * per_step) + t % 2];
      y[row] = s;
    }
    if (split_steps<P>(sg) > 1) qv::barrier();   // partial is rewritten by the next step
  }
}

// ---- int8 activations (ops::quantize_activations_q8's rounding) --------------------------------
// Four elements of a 32-element block as one word of int8 q = v * (127 / max|block|) rounded to
// nearest, ties away from zero (inv = 0 for a block of zeros), and the block's maximum from its
// 8 threads' parts in workgroup memory (`part`, a word's thread at t, the block's first at t - t %
// 8): kernels/matvec.cpp quantizes a vector alone with them, kernels/norms.cpp a norm's output.
QV_DEVICE uint32_t quant_byte(float v, float inv) {
  float r = qv::floor(qv::abs(v) * inv + 0.5f);
  return static_cast<uint32_t>(static_cast<int32_t>(v < 0.0f ? -r : r)) & 0xFFu;
}
QV_DEVICE uint32_t quant_word(qv::float4 v, float inv) {
  return quant_byte(v[0], inv) | quant_byte(v[1], inv) << 8 | quant_byte(v[2], inv) << 16 | quant_byte(v[3], inv) << 24;
}
QV_DEVICE float abs_max4(qv::float4 v) {
  return qv::max(qv::max(qv::abs(v[0]), qv::abs(v[1])), qv::max(qv::abs(v[2]), qv::abs(v[3])));
}
template <typename Part>
QV_DEVICE float block_of_8_max(const Part& part, uint32_t t) {
  uint32_t f = t - t % 8;
  return qv::max(qv::max(qv::max(part[f], part[f + 1]), qv::max(part[f + 2], part[f + 3])),
                 qv::max(qv::max(part[f + 4], part[f + 5]), qv::max(part[f + 6], part[f + 7])));
}
// A thread's four elements v of a 32-element block as int8 activations (ops::quantize_activations_q8's
// rounding), the block's 8 threads' max|v| at part[i - i % 8 ..]: the quant word to xq[word];
// returns the block's d = max / 127, which the block's first thread stores.
template <typename Part>
QV_DEVICE float q8_store_quants(const Part& part, uint32_t i, qv::float4 v, uint32_t* xq, uint32_t word) {
  float amax = block_of_8_max(part, i);
  xq[word] = quant_word(v, amax > 0.0f ? 127.0f / amax : 0.0f);
  return amax / 127.0f;
}
// The whole of it for a thread t's four values v (of 32-element blocks whose 8 threads are all
// valid or none): their max|v| through part[t], a barrier (call from uniform control flow), a
// valid thread's quant word to xq[word]. Returns the block's d, which its first thread (t % 8 ==
// 0) stores where its kernel keeps the scales; 0 where !valid.
template <typename Part>
QV_DEVICE float q8_quantize(Part& part, uint32_t t, qv::float4 v, bool valid, uint32_t* xq, uint32_t word) {
  if (valid) part[t] = abs_max4(v);
  qv::barrier();
  float d = 0.0f;
  if (valid) d = q8_store_quants(part, t, v, xq, word);
  return d;
}

}  // namespace qvops
