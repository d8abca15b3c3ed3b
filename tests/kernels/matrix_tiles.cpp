// The matrix-unit builtins (docs/matrix.md): a banded matmul that uses every one of them —
// A from shared memory, B from a buffer as stored (K x N) or transposed (N x K), an accumulator
// loaded from memory, element-wise arithmetic on it, stores as float and as T. Correct for any
// subgroup size: the block's subgroups split the band's output tiles between them.
// Not built for HSACO: there the matrix builtins take the portable fallback, which LLVM's AMDGPU
// back end needs minutes to compile (165 s for this file; docs/matrix.md) — MFMA is the lowering
// that target needs, and no AMD GPU is here to run either.
#include <quiver/kernel.h>

constexpr uint32_t kMaxK = 128;

// out[M x N] = alpha * (A x B + C0); out16 = T(that + 1). One block per 16-row band of A.
template <typename T>
QV_KERNEL QV_BLOCK(64) QV_TARGETS(ptx, spirv, msl, wgsl, cpu) void matrix_tiles(const T* a, const T* b, const float* c0, float* out, T* out16, uint32_t n,
                                         uint32_t k, uint32_t b_transposed, float alpha) {
  qv::shared<T, 16 * (kMaxK + 8)> band;   // the band's 16 rows of A, padded rows
  uint32_t row0 = qv::block_id_x() * 16;
  uint32_t stride = k + 8;
  for (uint32_t i = qv::thread_id_x(); i < 16 * k; i += 64) band[(i / k) * stride + i % k] = a[(row0 + i / k) * k + i % k];
  qv::barrier();
  uint32_t sg = qv::subgroup_size();
  uint32_t subgroups = (64 + sg - 1) / sg;
  for (uint32_t j = (qv::thread_id_x() / sg) * 16; j < n; j += subgroups * 16) {
    qv::matrix_acc<float> acc = qv::load_matrix_acc(c0 + row0 * n + j, n);
    for (uint32_t kk = 0; kk < k; kk += 16) {
      qv::matrix_a<T> ta = qv::load_matrix_a(&band[kk], stride);
      qv::matrix_b<T> tb;
      if (b_transposed != 0) tb = qv::load_matrix_b_transposed(b + j * k + kk, k);
      else tb = qv::load_matrix_b(b + kk * n + j, n);
      acc = qv::mma(ta, tb, acc);
    }
    acc *= alpha;
    qv::store_matrix(out + row0 * n + j, n, acc);
    qv::matrix_acc<float> one(1.0f);
    qv::store_matrix(out16 + row0 * n + j, n, acc + one);
  }
}
template void matrix_tiles<qv::bf16>(const qv::bf16*, const qv::bf16*, const float*, float*, qv::bf16*, uint32_t,
                                     uint32_t, uint32_t, float);
template void matrix_tiles<qv::half>(const qv::half*, const qv::half*, const float*, float*, qv::half*, uint32_t,
                                     uint32_t, uint32_t, float);

// The accumulator-only builtins an online softmax needs (docs/matrix.md): row_max / row_sum
// broadcasts, element-wise exp / exp2 / min / max / * / / of accumulators and to_matrix_a, on a
// 16 x 32 score band per block: P = exp2(S - rowmax S), out = (T(P) x V) / rowsum P.
// Subgroup 0 of the block does the work (any subgroup size).
// PTX, CPU and SPIR-V's cooperative-matrix image (where half tiles are cooperative matrices and
// the accumulator math runs on lane shares) only: in the portable fallback (which the CPU target
// runs) this kernel is ~50 000 scalar operations in one block — 768 exp / exp2 polynomials on
// 256-element tiles, two 4096-fma products — and NVIDIA's Vulkan driver did not finish compiling
// its SPIR-V in 300 s on the H100 (lavapipe: 70-90 s). The fallback is the same neutral-IR code
// on every target; bf16 tiles take it in the cooperative-matrix image too, so the test does not
// launch them there.
template <typename T>
QV_KERNEL QV_BLOCK(32) QV_TARGETS(ptx, cpu, spirv:vulkan1.3_coopmat) void matrix_softmax(const float* s, const T* v, float scale,
                                                                               float* out, float* row_m, float* row_l,
                                                                               float* elem) {
  if (qv::thread_id_x() / qv::subgroup_size() != 0) return;
  uint32_t row0 = qv::block_id_x() * 16;
  qv::matrix_acc<float> s0 = qv::load_matrix_acc(s + row0 * 32, 32) * scale;
  qv::matrix_acc<float> s1 = qv::load_matrix_acc(s + row0 * 32 + 16, 32) * scale;
  qv::matrix_acc<float> m = qv::row_max(qv::max(s0, s1));
  qv::matrix_acc<float> p0 = qv::exp2(s0 - m);
  qv::matrix_acc<float> p1 = qv::exp2(s1 - m);
  qv::matrix_acc<float> l = qv::row_sum(p0 + p1);
  qv::matrix_acc<float> o;
  o = qv::mma(qv::to_matrix_a<T>(p0), qv::load_matrix_b(v, 16), o);
  o = qv::mma(qv::to_matrix_a<T>(p1), qv::load_matrix_b(v + 16 * 16, 16), o);
  qv::store_matrix(out + row0 * 16, 16, o / l);
  qv::store_matrix(row_m + row0 * 16, 16, m);
  qv::store_matrix(row_l + row0 * 16, 16, l);
  qv::matrix_acc<float> e = qv::exp(qv::min(s0, s1));
  e *= s1;
  qv::store_matrix(elem + row0 * 16, 16, e);
}
template void matrix_softmax<qv::bf16>(const float*, const qv::bf16*, float, float*, float*, float*, float*);
template void matrix_softmax<qv::half>(const float*, const qv::half*, float, float*, float*, float*, float*);

// int8 tiles (16 x 32 times 32 x 16 into int32, docs/matrix.md): out = A x B + C0 + bias as
// int32 (wrapping: C0 spans the whole int32 range), outf = float(that) * alpha. A comes from
// shared memory; B from a buffer or from shared memory, as stored (K x N) or transposed (N x K):
// b_mode 0 buffer K x N, 1 buffer N x K, 2 shared K x N, 3 shared N x K. One block per 16-row
// band, its subgroups splitting the band's output tiles (any subgroup size). Built where the
// suite runs it (CPU, Vulkan, CUDA): qv::shared int8 arrays are not WGSL's.
constexpr uint32_t kMaxKI8 = 128, kMaxNI8 = 96;
QV_KERNEL QV_BLOCK(64) QV_TARGETS(ptx, spirv, cpu) void matrix_tiles_i8(
    const int8_t* a, const int8_t* b, const int32_t* c0, int32_t* out, float* outf, uint32_t n, uint32_t k,
    uint32_t b_mode, int32_t bias, float alpha) {
  qv::shared<int8_t, 16 * (kMaxKI8 + 16)> band;      // rows padded by 16 bytes (int8 strides: multiples of 16)
  qv::shared<int8_t, kMaxKI8 * (kMaxNI8 + 16)> bs;   // B for b_mode 2 and 3, rows padded likewise
  uint32_t row0 = qv::block_id_x() * 16;
  uint32_t stride = k + 16;
  for (uint32_t i = qv::thread_id_x(); i < 16 * k; i += 64) band[(i / k) * stride + i % k] = a[(row0 + i / k) * k + i % k];
  bool transposed = b_mode % 2 == 1;
  uint32_t cols = transposed ? k : n;
  uint32_t bstride = cols + 16;
  if (b_mode >= 2)
    for (uint32_t i = qv::thread_id_x(); i < k * n; i += 64) bs[(i / cols) * bstride + i % cols] = b[i];
  qv::barrier();
  uint32_t sg = qv::subgroup_size();
  uint32_t subgroups = (64 + sg - 1) / sg;
  for (uint32_t j = (qv::thread_id_x() / sg) * 16; j < n; j += subgroups * 16) {
    qv::matrix_acc<int32_t> acc = qv::load_matrix_acc(c0 + row0 * n + j, n);
    for (uint32_t kk = 0; kk < k; kk += 32) {
      qv::matrix_a<int8_t> ta = qv::load_matrix_a(&band[kk], stride);
      qv::matrix_b<int8_t> tb;
      if (b_mode == 0) tb = qv::load_matrix_b(b + kk * n + j, n);
      else if (b_mode == 1) tb = qv::load_matrix_b_transposed(b + j * k + kk, k);
      else if (b_mode == 2) tb = qv::load_matrix_b(&bs[kk * bstride + j], bstride);
      else tb = qv::load_matrix_b_transposed(&bs[j * bstride + kk], bstride);
      acc = qv::mma(ta, tb, acc);
    }
    acc += qv::matrix_acc<int32_t>(bias);
    qv::store_matrix(out + row0 * n + j, n, acc);
    qv::store_matrix(outf + row0 * n + j, n, qv::matrix_acc<float>(acc) * alpha);
  }
}
