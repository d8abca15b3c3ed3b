// Matrix products, tiled through shared memory.
//   matmul_nn<T>: C[M][N] = A[M][K] * B[K][N]
//   matmul_nt<T>: C[M][N] = A[M][K] * B[N][K]^T   (B is a linear layer's weight, out x in)
//   matmul_w8a8:  C[M][N] = float(sum_k A[m][k] * B[n][k]) * a_scale[m] * b_scale[n]
//                 (int8 activations and weights, exact int32 accumulation through qv::dot4_i8,
//                 per-row activation scales and per-output-channel weight scales)
// All row-major. A block of 16 x 16 threads computes a 64 x 64 tile of C, each thread a 4 x 4
// sub-tile (rows ty + 16 i, columns tx + 16 j, so a warp reads consecutive shared addresses);
// K advances 16 at a time through shared tiles filled by coalesced loads, zero-padded at the
// edges so any M, N, K works. The A and B tiles share one qv::shared array (A first).
#include "common.h"

using qvops::from_f32;
using qvops::to_f32;

constexpr uint32_t kTile = 64;    // C tile edge
constexpr uint32_t kDepth = 16;   // K per shared tile (floats); 16 int8 = 4 packed words for w8a8
constexpr uint32_t kSide = 16;    // threads per block edge

namespace {

// c_j += a * b_j for one row of a thread's 4 x 4 sub-tile.
QV_DEVICE void fma_row(float a, float b0, float b1, float b2, float b3, float& c0, float& c1, float& c2,
                       float& c3) {
  c0 += a * b0;
  c1 += a * b1;
  c2 += a * b2;
  c3 += a * b3;
}

template <typename T>
QV_DEVICE void store_c(T* c, uint32_t m, uint32_t n, uint32_t row, uint32_t col, float v) {
  if (row < m && col < n) c[row * n + col] = from_f32<T>(v);
}

template <typename T>
QV_DEVICE void store_c_row(T* c, uint32_t m, uint32_t n, uint32_t row, uint32_t col0, float v0, float v1,
                           float v2, float v3) {
  store_c(c, m, n, row, col0, v0);
  store_c(c, m, n, row, col0 + kSide, v1);
  store_c(c, m, n, row, col0 + 2 * kSide, v2);
  store_c(c, m, n, row, col0 + 3 * kSide, v3);
}

template <typename T, bool B_TRANSPOSED>
QV_DEVICE void matmul_tile(const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  constexpr uint32_t kB = kDepth * kTile;   // B's part of `tiles`
  qv::shared<float, 2 * kDepth * kTile> tiles;   // A: [kk * kTile + row], B: kB + [kk * kTile + column]
  uint32_t tx = qv::thread_id_x(), ty = qv::thread_id_y();
  uint32_t t = ty * kSide + tx;
  uint32_t m0 = qv::block_id_y() * kTile, n0 = qv::block_id_x() * kTile;
  float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
  float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
  for (uint32_t k0 = 0; k0 < k; k0 += kDepth) {
    // Each thread loads 4 elements of each tile; 16 consecutive threads read 16 consecutive k
    // (A, and B^T) or n (B).
    for (uint32_t e = t; e < kDepth * kTile; e += kSide * kSide) {
      uint32_t r = e / kDepth, kk = e % kDepth;
      uint32_t row = m0 + r, kg = k0 + kk;
      tiles[kk * kTile + r] = row < m && kg < k ? to_f32(a[row * k + kg]) : 0.0f;
      if constexpr (B_TRANSPOSED) {
        uint32_t col = n0 + r;
        tiles[kB + kk * kTile + r] = col < n && kg < k ? to_f32(b[col * k + kg]) : 0.0f;
      } else {
        uint32_t kb = e / kTile, cb = e % kTile;
        uint32_t kgb = k0 + kb, col = n0 + cb;
        tiles[kB + kb * kTile + cb] = kgb < k && col < n ? to_f32(b[kgb * n + col]) : 0.0f;
      }
    }
    qv::barrier();
    for (uint32_t kk = 0; kk < kDepth; ++kk) {
      uint32_t o = kk * kTile;
      float b0 = tiles[kB + o + tx], b1 = tiles[kB + o + tx + kSide];
      float b2 = tiles[kB + o + tx + 2 * kSide], b3 = tiles[kB + o + tx + 3 * kSide];
      fma_row(tiles[o + ty], b0, b1, b2, b3, c00, c01, c02, c03);
      fma_row(tiles[o + ty + kSide], b0, b1, b2, b3, c10, c11, c12, c13);
      fma_row(tiles[o + ty + 2 * kSide], b0, b1, b2, b3, c20, c21, c22, c23);
      fma_row(tiles[o + ty + 3 * kSide], b0, b1, b2, b3, c30, c31, c32, c33);
    }
    qv::barrier();
  }
  store_c_row(c, m, n, m0 + ty, n0 + tx, c00, c01, c02, c03);
  store_c_row(c, m, n, m0 + ty + kSide, n0 + tx, c10, c11, c12, c13);
  store_c_row(c, m, n, m0 + ty + 2 * kSide, n0 + tx, c20, c21, c22, c23);
  store_c_row(c, m, n, m0 + ty + 3 * kSide, n0 + tx, c30, c31, c32, c33);
}

// Four int8 values from row `row` of a row-major int8 matrix, starting at column k0, packed
// little-endian for qv::dot4_i8; zero past the edges.
QV_DEVICE uint32_t pack4_i8(const int8_t* p, uint32_t rows, uint32_t cols, uint32_t row, uint32_t k0) {
  uint32_t packed = 0;
  if (row < rows) {
    for (uint32_t i = 0; i < 4; ++i) {
      if (k0 + i < cols) packed |= static_cast<uint32_t>(static_cast<uint8_t>(p[row * cols + k0 + i])) << (8 * i);
    }
  }
  return packed;
}

QV_DEVICE void dot_row(uint32_t a, uint32_t b0, uint32_t b1, uint32_t b2, uint32_t b3, int32_t& c0, int32_t& c1,
                       int32_t& c2, int32_t& c3) {
  c0 = qv::dot4_i8(a, b0, c0);
  c1 = qv::dot4_i8(a, b1, c1);
  c2 = qv::dot4_i8(a, b2, c2);
  c3 = qv::dot4_i8(a, b3, c3);
}

// The scaled int32 product; the multiplication order is part of the op's definition (the
// numeric gate reproduces it exactly): (float(acc) * a_scale[row]) * b_scale[col].
QV_DEVICE void store_w8a8(float* c, const float* a_scale, const float* b_scale, uint32_t m, uint32_t n,
                          uint32_t row, uint32_t col, int32_t acc) {
  if (row < m && col < n) c[row * n + col] = static_cast<float>(acc) * a_scale[row] * b_scale[col];
}

QV_DEVICE void store_w8a8_row(float* c, const float* a_scale, const float* b_scale, uint32_t m, uint32_t n,
                              uint32_t row, uint32_t col0, int32_t v0, int32_t v1, int32_t v2, int32_t v3) {
  store_w8a8(c, a_scale, b_scale, m, n, row, col0, v0);
  store_w8a8(c, a_scale, b_scale, m, n, row, col0 + kSide, v1);
  store_w8a8(c, a_scale, b_scale, m, n, row, col0 + 2 * kSide, v2);
  store_w8a8(c, a_scale, b_scale, m, n, row, col0 + 3 * kSide, v3);
}

}  // namespace

template <typename T>
QV_KERNEL QV_BLOCK(kSide, kSide) void matmul_nn(const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  matmul_tile<T, false>(a, b, c, m, n, k);
}

template <typename T>
QV_KERNEL QV_BLOCK(kSide, kSide) void matmul_nt(const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  matmul_tile<T, true>(a, b, c, m, n, k);
}

QV_KERNEL QV_BLOCK(kSide, kSide) void matmul_w8a8(const int8_t* a, const int8_t* b, const float* a_scale,
                                                  const float* b_scale, float* c, uint32_t m, uint32_t n,
                                                  uint32_t k) {
  constexpr uint32_t kWords = kDepth / 4;   // packed words per row of a shared tile
  constexpr uint32_t kB = kWords * kTile;   // B's part of `tiles`
  qv::shared<uint32_t, 2 * kWords * kTile> tiles;   // A: [word * kTile + row], B: kB + [word * kTile + column]
  uint32_t tx = qv::thread_id_x(), ty = qv::thread_id_y();
  uint32_t t = ty * kSide + tx;
  uint32_t m0 = qv::block_id_y() * kTile, n0 = qv::block_id_x() * kTile;
  int32_t c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
  int32_t c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
  for (uint32_t k0 = 0; k0 < k; k0 += kDepth) {
    // One packed word of A and one of B per thread (64 rows x 4 words each).
    uint32_t r = t / kWords, wd = t % kWords;
    tiles[wd * kTile + r] = pack4_i8(a, m, k, m0 + r, k0 + 4 * wd);
    tiles[kB + wd * kTile + r] = pack4_i8(b, n, k, n0 + r, k0 + 4 * wd);
    qv::barrier();
    for (uint32_t wi = 0; wi < kWords; ++wi) {
      uint32_t o = wi * kTile;
      uint32_t b0 = tiles[kB + o + tx], b1 = tiles[kB + o + tx + kSide];
      uint32_t b2 = tiles[kB + o + tx + 2 * kSide], b3 = tiles[kB + o + tx + 3 * kSide];
      dot_row(tiles[o + ty], b0, b1, b2, b3, c00, c01, c02, c03);
      dot_row(tiles[o + ty + kSide], b0, b1, b2, b3, c10, c11, c12, c13);
      dot_row(tiles[o + ty + 2 * kSide], b0, b1, b2, b3, c20, c21, c22, c23);
      dot_row(tiles[o + ty + 3 * kSide], b0, b1, b2, b3, c30, c31, c32, c33);
    }
    qv::barrier();
  }
  store_w8a8_row(c, a_scale, b_scale, m, n, m0 + ty, n0 + tx, c00, c01, c02, c03);
  store_w8a8_row(c, a_scale, b_scale, m, n, m0 + ty + kSide, n0 + tx, c10, c11, c12, c13);
  store_w8a8_row(c, a_scale, b_scale, m, n, m0 + ty + 2 * kSide, n0 + tx, c20, c21, c22, c23);
  store_w8a8_row(c, a_scale, b_scale, m, n, m0 + ty + 3 * kSide, n0 + tx, c30, c31, c32, c33);
}

template void matmul_nn<float>(const float*, const float*, float*, uint32_t, uint32_t, uint32_t);
template void matmul_nt<float>(const float*, const float*, float*, uint32_t, uint32_t, uint32_t);
template void matmul_nn<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_nt<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_nn<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_nt<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
