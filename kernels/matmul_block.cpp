// Matrix products on block tiles (docs/matrix.md "Block tiles"), 16-bit inputs, float accumulation:
//   matmul_block_nn<T>: C[M][N] = A[M][K] * B[K][N]
//   matmul_block_nt<T>: C[M][N] = A[M][K] * B[N][K]^T
// A block of 256 threads owns a 128 x 256 tile of C and adds A's 128 x 32 slice times B's 32 x 256
// slice per step, both read straight from the buffers: on a Vulkan device with workgroup-scope
// cooperative matrices (VK_NV_cooperative_matrix2) each step is one cooperative product whose
// operands the driver stages through shared memory itself, which the subgroup tiles of
// kernels/matmul_tiles.cpp cannot do (SPIR-V has no asynchronous copy). Built for that image only:
// the portable fallback would be far slower than the other kernels. runtime/ops picks these when
// M is a multiple of 128, N of 256 and K of 32.
// N and K are specialization constants on Vulkan (QV_SPECIALIZE: a pipeline per shape): with
// the strides of the cooperative loads as run-time values NVIDIA's driver (580) ran the same
// product at a third of the speed (69 against 194 TFLOP/s, docs/perf/NOTES.md).
// Tile shape: on the H100 (driver 580) a 40-line workgroup-scope product ran 128 x 256 x 32 at
// 195 TFLOP/s and 128 x 128 x 64 at 190 (4096^3), 256 x 256 x 32 at 9 (its accumulator does not
// fit the registers); docs/perf/NOTES.md.
#include "common.h"

constexpr uint32_t kBlockM = 128, kBlockN = 256, kBlockK = 32;

template <typename T>
QV_KERNEL QV_BLOCK(256) QV_TARGETS(spirv:vulkan1.3_coopmat) void matmul_block_nn(const T* a, const T* b, T* c, uint32_t m,
                                                                                 QV_SPECIALIZE uint32_t n,
                                                                                 QV_SPECIALIZE uint32_t k) {
  qvops::block_matmul_tile<kBlockM, kBlockN, kBlockK, false, float>(a, b, c, n, k);
}

template <typename T>
QV_KERNEL QV_BLOCK(256) QV_TARGETS(spirv:vulkan1.3_coopmat) void matmul_block_nt(const T* a, const T* b, T* c, uint32_t m,
                                                                                 QV_SPECIALIZE uint32_t n,
                                                                                 QV_SPECIALIZE uint32_t k) {
  qvops::block_matmul_tile<kBlockM, kBlockN, kBlockK, true, float>(a, b, c, n, k);
}

template void matmul_block_nn<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_block_nt<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
