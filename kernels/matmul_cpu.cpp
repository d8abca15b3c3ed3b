// f32 matrix products for the CPU target (QV_TARGETS(cpu)): a block of one thread per tile of C,
// its accumulators in registers, written so that the compiled loop is the register-blocked inner
// kernel of a CPU sgemm. The portable kernel (matmul.cpp) stages tiles in workgroup memory for
// 256 threads that a CPU runs one after another, each with scalar products: ~5% of OpenBLAS.
//   matmul_cpu_nn: C[M][N] = A[M][K] B[K][N], a thread per column of four 8 x 16 tiles, K in
//     steps of 256 (each step's 16 KB panel of B then serves the four tiles from L1; a thread per
//     tile over the whole of K streamed B from L3 once per tile row: 0.56 of OpenBLAS at 1024^3).
//     Per k, two 8-float loads of B's row, eight broadcasts of A's column, sixteen 8-wide fused
//     multiply-adds. N % 16 == 0 (runtime/ops/ops.cpp), so B's rows start on 32-byte boundaries;
//     rows past the last whole tile take the scalar edge path.
//   matmul_cpu_nt: C[M][N] = A[M][K] B[N][K]^T (a linear layer's weight), a thread per 4 x 4 tile:
//     per 8 k, four 8-float loads of A's rows and four of B's, sixteen 8-wide fused multiply-adds
//     into 8-lane partial sums, added across their lanes at the end. K % 8 == 0; tiles past M or N
//     take the scalar edge path.
// The 8-wide fused multiply-add is qvops::fma8 (common.h): one vfmadd after SLP vectorisation.
#include "common.h"

using qvops::F8;
using qvops::kCpuNnCols;
using qvops::kCpuNnRows;
using qvops::kCpuNnTiles;
using qvops::kCpuNtCols;
using qvops::kCpuNtRows;
using qvops::fma8;
using qvops::sum8;

// kCpuNnRows x kCpuNnCols a thread, kCpuNnTiles of them a block, kCpuNtRows x kCpuNtCols an nt
// block (launch_shapes.h: runtime/ops/ops.cpp sizes the grids with the same constants).
constexpr uint32_t kCpuNnDepth = 256;   // k a step of the nn kernel

namespace {

// c[i][j] for the tile's rows i0 .. and columns j0 .., those inside M x N, one at a time.
QV_DEVICE void edge_tile(const float* a, const float* b, float* c, uint32_t m, uint32_t n, uint32_t k, uint32_t i0,
                         uint32_t j0, uint32_t rows, uint32_t cols, bool b_transposed) {
  for (uint32_t i = i0; i < i0 + rows && i < m; ++i)
    for (uint32_t j = j0; j < j0 + cols && j < n; ++j) {
      float acc = 0.0f;
      for (uint32_t kk = 0; kk < k; ++kk) acc = qv::fma(a[i * k + kk], b_transposed ? b[j * k + kk] : b[kk * n + j], acc);
      c[i * n + j] = acc;
    }
}

// Row i of the nn tile: c_lo, c_hi += a * (b_lo, b_hi).
QV_DEVICE void nn_row(float a, F8 b_lo, F8 b_hi, F8& c_lo, F8& c_hi) {
  c_lo = fma8(F8(a), b_lo, c_lo);
  c_hi = fma8(F8(a), b_hi, c_hi);
}

// The 8 x 16 tile of C at (i0, j0) over k0 .. k1: its accumulators start from C (or zero for
// the first depth step), the fused multiply-adds in the order of k, C written back. n % 16 == 0
// and j0 % 16 == 0 keep C's rows on 32-byte boundaries.
QV_DEVICE void nn_tile(const float* a, const float* b, float* c, uint32_t n, uint32_t k, uint32_t i0, uint32_t j0,
                       uint32_t k0, uint32_t k1) {
  F8 z(0.0f);
  F8 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  F8 c40 = z, c41 = z, c50 = z, c51 = z, c60 = z, c61 = z, c70 = z, c71 = z;
  uint32_t at = i0 * n + j0;
  if (k0 > 0) {
    c00 = qv::load<8>(c + at), c01 = qv::load<8>(c + at + 8), at += n;
    c10 = qv::load<8>(c + at), c11 = qv::load<8>(c + at + 8), at += n;
    c20 = qv::load<8>(c + at), c21 = qv::load<8>(c + at + 8), at += n;
    c30 = qv::load<8>(c + at), c31 = qv::load<8>(c + at + 8), at += n;
    c40 = qv::load<8>(c + at), c41 = qv::load<8>(c + at + 8), at += n;
    c50 = qv::load<8>(c + at), c51 = qv::load<8>(c + at + 8), at += n;
    c60 = qv::load<8>(c + at), c61 = qv::load<8>(c + at + 8), at += n;
    c70 = qv::load<8>(c + at), c71 = qv::load<8>(c + at + 8);
  }
  for (uint32_t kk = k0; kk < k1; ++kk) {
    F8 b_lo = qv::load<8>(b + kk * n + j0), b_hi = qv::load<8>(b + kk * n + j0 + 8);
    nn_row(a[i0 * k + kk], b_lo, b_hi, c00, c01);
    nn_row(a[(i0 + 1) * k + kk], b_lo, b_hi, c10, c11);
    nn_row(a[(i0 + 2) * k + kk], b_lo, b_hi, c20, c21);
    nn_row(a[(i0 + 3) * k + kk], b_lo, b_hi, c30, c31);
    nn_row(a[(i0 + 4) * k + kk], b_lo, b_hi, c40, c41);
    nn_row(a[(i0 + 5) * k + kk], b_lo, b_hi, c50, c51);
    nn_row(a[(i0 + 6) * k + kk], b_lo, b_hi, c60, c61);
    nn_row(a[(i0 + 7) * k + kk], b_lo, b_hi, c70, c71);
  }
  at = i0 * n + j0;
  qv::store(c + at, c00), qv::store(c + at + 8, c01), at += n;
  qv::store(c + at, c10), qv::store(c + at + 8, c11), at += n;
  qv::store(c + at, c20), qv::store(c + at + 8, c21), at += n;
  qv::store(c + at, c30), qv::store(c + at + 8, c31), at += n;
  qv::store(c + at, c40), qv::store(c + at + 8, c41), at += n;
  qv::store(c + at, c50), qv::store(c + at + 8, c51), at += n;
  qv::store(c + at, c60), qv::store(c + at + 8, c61), at += n;
  qv::store(c + at, c70), qv::store(c + at + 8, c71);
}

}  // namespace

// A block per kCpuNnTiles 8 x 16 tiles stacked in a column of C, K in steps of kCpuNnDepth: the
// step's kCpuNnDepth x 16 panel of B (16 KB) is read from memory by the first tile and from L1
// by the others, and the blocks of a grid row (one after another on a core) share their rows of
// A through L2. Rows of the last partial tile take the scalar edge path.
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void matmul_cpu_nn(const float* a, const float* b, float* c, uint32_t m,
                                                         uint32_t n, uint32_t k) {
  uint32_t i_base = qv::block_id_y() * kCpuNnRows * kCpuNnTiles, j0 = qv::block_id_x() * kCpuNnCols;
  for (uint32_t k0 = 0; k0 < k; k0 += kCpuNnDepth) {
    uint32_t k1 = qv::min(k0 + kCpuNnDepth, k);
    for (uint32_t t = 0; t < kCpuNnTiles; ++t) {
      uint32_t i0 = i_base + t * kCpuNnRows;
      if (i0 + kCpuNnRows <= m) nn_tile(a, b, c, n, k, i0, j0, k0, k1);
    }
  }
  for (uint32_t t = 0; t < kCpuNnTiles; ++t) {
    uint32_t i0 = i_base + t * kCpuNnRows;
    if (i0 < m && i0 + kCpuNnRows > m) edge_tile(a, b, c, m, n, k, i0, j0, kCpuNnRows, kCpuNnCols, false);
  }
}

QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void matmul_cpu_nt(const float* a, const float* b, float* c, uint32_t m,
                                                         uint32_t n, uint32_t k) {
  uint32_t i0 = qv::block_id_y() * kCpuNtRows, j0 = qv::block_id_x() * kCpuNtCols;
  if (i0 + kCpuNtRows > m || j0 + kCpuNtCols > n) {
    edge_tile(a, b, c, m, n, k, i0, j0, kCpuNtRows, kCpuNtCols, true);
    return;
  }
  F8 z(0.0f);
  F8 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
  F8 c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
  for (uint32_t kk = 0; kk < k; kk += 8) {
    F8 a0 = qv::load<8>(a + i0 * k + kk), a1 = qv::load<8>(a + (i0 + 1) * k + kk);
    F8 a2 = qv::load<8>(a + (i0 + 2) * k + kk), a3 = qv::load<8>(a + (i0 + 3) * k + kk);
    F8 b0 = qv::load<8>(b + j0 * k + kk), b1 = qv::load<8>(b + (j0 + 1) * k + kk);
    F8 b2 = qv::load<8>(b + (j0 + 2) * k + kk), b3 = qv::load<8>(b + (j0 + 3) * k + kk);
    c00 = fma8(a0, b0, c00), c01 = fma8(a0, b1, c01), c02 = fma8(a0, b2, c02), c03 = fma8(a0, b3, c03);
    c10 = fma8(a1, b0, c10), c11 = fma8(a1, b1, c11), c12 = fma8(a1, b2, c12), c13 = fma8(a1, b3, c13);
    c20 = fma8(a2, b0, c20), c21 = fma8(a2, b1, c21), c22 = fma8(a2, b2, c22), c23 = fma8(a2, b3, c23);
    c30 = fma8(a3, b0, c30), c31 = fma8(a3, b1, c31), c32 = fma8(a3, b2, c32), c33 = fma8(a3, b3, c33);
  }
  uint32_t at = i0 * n + j0;   // n need not be a multiple of 4: element stores
  c[at] = sum8(c00), c[at + 1] = sum8(c01), c[at + 2] = sum8(c02), c[at + 3] = sum8(c03), at += n;
  c[at] = sum8(c10), c[at + 1] = sum8(c11), c[at + 2] = sum8(c12), c[at + 3] = sum8(c13), at += n;
  c[at] = sum8(c20), c[at + 1] = sum8(c21), c[at + 2] = sum8(c22), c[at + 3] = sum8(c23), at += n;
  c[at] = sum8(c30), c[at + 1] = sum8(c31), c[at + 2] = sum8(c32), c[at + 3] = sum8(c33);
}
