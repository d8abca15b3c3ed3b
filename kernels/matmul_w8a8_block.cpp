// int8 products on block tiles (docs/matrix.md "Block tiles"), for Vulkan devices with
// workgroup-scope int8 cooperative matrices (VK_NV_cooperative_matrix2):
//   matmul_w8a8_block:  S[M][N] = sum_k A[m][k] * B[n][k], int32 (wrapping), written as int32
//   w8a8_scale:         C[M][N] = float(S[m][n]) * a_scale[m] * b_scale[n], in place
// The two run back to back on one buffer (runtime/ops binds C's memory as int32 for the first):
// a cooperative matrix cannot be scaled by per-row and per-column vectors without
// VK_NV_cooperative_matrix2's per-element operations, which MLIR 19 cannot emit. The second pass
// reads and writes 8 bytes per element (0.2 ms at 8192^2 on the H100), beside ~3 ms of products.
// matmul_w8a8_block is matmul_block's schedule in bytes: 128 x 256 tiles of S, 64 of K a step
// (the same 16 + 32 KiB of operands per step as the half kernel's 32), strides specialized.
// runtime/ops picks it when M is a multiple of 128, N of 256 and K of 64.
#include "common.h"

constexpr uint32_t kW8BlockM = 128, kW8BlockN = 256, kW8BlockK = 64;

QV_KERNEL QV_BLOCK(256) QV_TARGETS(spirv:vulkan1.3_coopmat) void matmul_w8a8_block(const int8_t* a, const int8_t* b,
                                                                                   int32_t* s, uint32_t m,
                                                                                   QV_SPECIALIZE uint32_t n,
                                                                                   QV_SPECIALIZE uint32_t k) {
  qvops::block_matmul_tile<kW8BlockM, kW8BlockN, kW8BlockK, true, int32_t>(a, b, s, n, k);
}

// Element i of C from element i of S, the same memory: each thread reads its element before it
// writes it, and no other thread touches it.
QV_KERNEL QV_BLOCK(256) QV_TARGETS(spirv:vulkan1.3_coopmat) void w8a8_scale(const int32_t* s, float* c,
                                                                            const float* a_scale, const float* b_scale,
                                                                            uint32_t m, uint32_t n) {
  uint32_t i = qvops::block_row() * 256 + qv::thread_id_x();
  if (i < m * n) c[i] = static_cast<float>(s[i]) * a_scale[i / n] * b_scale[i % n];
}
