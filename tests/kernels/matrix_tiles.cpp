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
