// matmul_w8a8 on the matrix units' int8 tiles (docs/matrix.md "int8 tiles"):
//   matmul_w8a8_tiles: C[M][N] = float(sum_k A[m][k] * B[n][k]) * a_scale[m] * b_scale[n]
// the contract of kernels/matmul.cpp's matmul_w8a8 (int8 A row-major M x K, int8 B a linear
// layer's weight N x K, exact int32 sums, the same scaling order; any M, N, K), built for PTX
// (mma.sync m16n8k32) and the Vulkan image whose tiles are cooperative matrices (16x16x32 i8).
// Elsewhere the portable fallback would be slower than matmul.cpp's dot4_i8 kernel, which the
// op library keeps using there (runtime/ops picks this one where the loaded image has it).
//
// A block of 8 warps computes a 128 x 128 tile of C; warp w owns rows 64 (w % 2) .. +63 and
// columns 32 (w / 2) .. +31: eight 16 x 16 int32 accumulators. A warp is 32 threads, the
// subgroup of NVIDIA's GPUs; a smaller subgroup repeats its warp's tiles (correct, redundant),
// and subgroups of more than 32 lanes are not supported.
// K advances 64 at a time (two 32-deep products per tile) through two shared buffers: each step
// first copies the next slice into the other buffer, then the warps multiply out of this one, so
// each step needs one barrier and no slice lives in registers across the products (on SPIR-V a
// slice held so is 64 scalarized bytes a thread; kernels/matmul_tiles.cpp's 32-deep kernel
// measured what that costs in registers). Shared rows are padded to 80 bytes so the eight
// 16-byte rows one fragment load (ldmatrix on PTX) reads fall in different banks (80 bytes = 20
// words: rows start at banks 0, 20, 8, 28, 16, 4, 24, 12). Past the edges of A and B the slices
// hold zeros, which add nothing to the sums.
// The scaled result goes out through a per-warp 16 x 16 int32 staging tile: the scales are per
// row and per column, and C's edge tiles are partly outside it, neither of which a tile store
// expresses. Shared memory: 2 x 2 x 10 KiB of slices + 8 KiB of staging = 48 KiB, the most a
// block may have on NVIDIA's Vulkan driver and in a static PTX `.shared` array.
#include "common.h"

namespace {

constexpr uint32_t kTileM = 128, kTileN = 128;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kDepth = 64;                // K per slice (bytes of a row)
constexpr uint32_t kRow = kDepth + 16;         // padded shared row of A and B^T (bytes)
constexpr uint32_t kSlice = kTileM * kRow;     // one buffer of A (or of B^T)

using SliceBuffer = qv::shared<int8_t, 2 * kSlice>;
using Stage = qv::shared<int32_t, 8 * 256>;   // one 16 x 16 tile per warp

// 8 bytes of row `row` of a row-major int8 matrix (rows x k) from column `col`, zero past the
// edges. One 8-byte load where the chunk is whole and aligned (k % 8 == 0: buffers start aligned).
QV_DEVICE qv::vec<int8_t, 8> load_chunk(const int8_t* p, uint32_t rows, uint32_t k, uint32_t row, uint32_t col) {
  if (row < rows && col + 8 <= k && k % 8 == 0) return qv::load<8>(p + row * k + col);
  uint32_t at = row * k + col;   // read only where the element is inside
  bool in = row < rows;
  int8_t zero = 0;
  return qv::vec<int8_t, 8>(in && col < k ? p[at] : zero, in && col + 1 < k ? p[at + 1] : zero,
                            in && col + 2 < k ? p[at + 2] : zero, in && col + 3 < k ? p[at + 3] : zero,
                            in && col + 4 < k ? p[at + 4] : zero, in && col + 5 < k ? p[at + 5] : zero,
                            in && col + 6 < k ? p[at + 6] : zero, in && col + 7 < k ? p[at + 7] : zero);
}

// Chunk j (0 .. 3) of this thread's share of a slice, 128 rows x 64 bytes = 1024 chunks of 8:
// chunk t + 256 j is row t / 8 + 32 j, bytes 8 (t % 8): eight threads read one row's 64 bytes.
QV_DEVICE uint32_t chunk_row(uint32_t t, uint32_t j) { return t / 8 + 32 * j; }
QV_DEVICE uint32_t chunk_col(uint32_t t) { return 8 * (t % 8); }

QV_DEVICE void load_slice(const int8_t* a, const int8_t* b, uint32_t m, uint32_t n, uint32_t k, uint32_t m0,
                          uint32_t n0, uint32_t k0, uint32_t t, qv::vec<int8_t, 8>& a0, qv::vec<int8_t, 8>& a1,
                          qv::vec<int8_t, 8>& a2, qv::vec<int8_t, 8>& a3, qv::vec<int8_t, 8>& b0,
                          qv::vec<int8_t, 8>& b1, qv::vec<int8_t, 8>& b2, qv::vec<int8_t, 8>& b3) {
  uint32_t col = k0 + chunk_col(t);
  a0 = load_chunk(a, m, k, m0 + chunk_row(t, 0), col);
  a1 = load_chunk(a, m, k, m0 + chunk_row(t, 1), col);
  a2 = load_chunk(a, m, k, m0 + chunk_row(t, 2), col);
  a3 = load_chunk(a, m, k, m0 + chunk_row(t, 3), col);
  b0 = load_chunk(b, n, k, n0 + chunk_row(t, 0), col);
  b1 = load_chunk(b, n, k, n0 + chunk_row(t, 1), col);
  b2 = load_chunk(b, n, k, n0 + chunk_row(t, 2), col);
  b3 = load_chunk(b, n, k, n0 + chunk_row(t, 3), col);
}

QV_DEVICE void store_slice(SliceBuffer& as, SliceBuffer& bs, uint32_t buf, uint32_t t, qv::vec<int8_t, 8> a0,
                           qv::vec<int8_t, 8> a1, qv::vec<int8_t, 8> a2, qv::vec<int8_t, 8> a3,
                           qv::vec<int8_t, 8> b0, qv::vec<int8_t, 8> b1, qv::vec<int8_t, 8> b2,
                           qv::vec<int8_t, 8> b3) {
  uint32_t at = buf * kSlice + chunk_row(t, 0) * kRow + chunk_col(t);
  constexpr uint32_t step = 32 * kRow;   // 32 rows between a thread's chunks
  qv::store(&as[at], a0);
  qv::store(&as[at + step], a1);
  qv::store(&as[at + 2 * step], a2);
  qv::store(&as[at + 3 * step], a3);
  qv::store(&bs[at], b0);
  qv::store(&bs[at + step], b1);
  qv::store(&bs[at + 2 * step], b2);
  qv::store(&bs[at + 3 * step], b3);
}

// One 32-deep step of a warp: four A tiles (rows) times two B tiles (columns).
QV_DEVICE void warp_step(const SliceBuffer& as, const SliceBuffer& bs, uint32_t a0, uint32_t b0,
                         qv::matrix_acc<int32_t>& c00, qv::matrix_acc<int32_t>& c01, qv::matrix_acc<int32_t>& c10,
                         qv::matrix_acc<int32_t>& c11, qv::matrix_acc<int32_t>& c20, qv::matrix_acc<int32_t>& c21,
                         qv::matrix_acc<int32_t>& c30, qv::matrix_acc<int32_t>& c31) {
  qv::matrix_b<int8_t> b_0 = qv::load_matrix_b_transposed(&bs[b0], kRow);
  qv::matrix_b<int8_t> b_1 = qv::load_matrix_b_transposed(&bs[b0 + 16 * kRow], kRow);
  qvops::mma_4x2(as, a0, kRow, b_0, b_1, c00, c01, c10, c11, c20, c21, c30, c31);
}

// C's 16 x 16 tile at (row, col) from accumulator c: through the warp's staging tile, each of its
// 32 threads writing every 32nd element (rows of 16 consecutive floats), inside M x N only.
// The scaling order is the op's definition (kernels/matmul.cpp store_w8a8).
QV_DEVICE void store_tile(Stage& stage, uint32_t warp, qv::matrix_acc<int32_t> c, float* out, const float* a_scale,
                          const float* b_scale, uint32_t m, uint32_t n, uint32_t row, uint32_t col) {
  qv::store_matrix(&stage[warp * 256], 16, c);
  qv::barrier();
  for (uint32_t e = qv::thread_id_x() % 32; e < 256; e += 32) {
    uint32_t r = row + e / 16, cc = col + e % 16;
    if (r < m && cc < n) out[r * n + cc] = static_cast<float>(stage[warp * 256 + e]) * a_scale[r] * b_scale[cc];
  }
  qv::barrier();   // the staging tile is written again next
}

}  // namespace

QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx, spirv:vulkan1.3_coopmat) void matmul_w8a8_tiles(
    const int8_t* a, const int8_t* b, const float* a_scale, const float* b_scale, float* c, uint32_t m, uint32_t n,
    uint32_t k) {
  SliceBuffer as;
  SliceBuffer bs;
  Stage stage;
  uint32_t t = qv::thread_id_x();
  uint32_t warp = t / 32;
  uint32_t m0 = qv::block_id_y() * kTileM, n0 = qv::block_id_x() * kTileN;
  uint32_t wa = 64 * (warp % 2) * kRow;   // the warp's rows of A
  uint32_t wb = 32 * (warp / 2) * kRow;   // its rows of B^T (columns of C)
  qv::matrix_acc<int32_t> c00, c01, c10, c11, c20, c21, c30, c31;
  qv::vec<int8_t, 8> a0, a1, a2, a3, b0, b1, b2, b3;
  if (k > 0) {
    load_slice(a, b, m, n, k, m0, n0, 0, t, a0, a1, a2, a3, b0, b1, b2, b3);
    store_slice(as, bs, 0, t, a0, a1, a2, a3, b0, b1, b2, b3);
  }
  qv::barrier();
  uint32_t buf = 0;
  for (uint32_t k0 = 0; k0 < k; k0 += kDepth) {
    if (k0 + kDepth < k) {
      load_slice(a, b, m, n, k, m0, n0, k0 + kDepth, t, a0, a1, a2, a3, b0, b1, b2, b3);
      store_slice(as, bs, 1 - buf, t, a0, a1, a2, a3, b0, b1, b2, b3);
    }
    uint32_t base = buf * kSlice;
    warp_step(as, bs, base + wa, base + wb, c00, c01, c10, c11, c20, c21, c30, c31);
    warp_step(as, bs, base + wa + 32, base + wb + 32, c00, c01, c10, c11, c20, c21, c30, c31);
    qv::barrier();
    buf = 1 - buf;
  }
  uint32_t row = m0 + 64 * (warp % 2), col = n0 + 32 * (warp / 2);
  store_tile(stage, warp, c00, c, a_scale, b_scale, m, n, row, col);
  store_tile(stage, warp, c01, c, a_scale, b_scale, m, n, row, col + 16);
  store_tile(stage, warp, c10, c, a_scale, b_scale, m, n, row + 16, col);
  store_tile(stage, warp, c11, c, a_scale, b_scale, m, n, row + 16, col + 16);
  store_tile(stage, warp, c20, c, a_scale, b_scale, m, n, row + 32, col);
  store_tile(stage, warp, c21, c, a_scale, b_scale, m, n, row + 32, col + 16);
  store_tile(stage, warp, c30, c, a_scale, b_scale, m, n, row + 48, col);
  store_tile(stage, warp, c31, c, a_scale, b_scale, m, n, row + 48, col + 16);
}
