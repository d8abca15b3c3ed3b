// Matrix products on the matrix units (docs/matrix.md), for 16-bit inputs with float accumulation:
//   matmul_tiles_nn<T>: C[M][N] = A[M][K] * B[K][N]
//   matmul_tiles_nt<T>: C[M][N] = A[M][K] * B[N][K]^T
// matmul_tiles_{nn,nt} are built for PTX (mma.sync), 64 deep; matmul_tiles_k32_{nn,nt}, the same
// schedule 32 deep, for the Vulkan image whose tiles are cooperative matrices (half only: what
// the devices report). Elsewhere the portable fallback would be slower than kernels/matmul.cpp's
// SIMT tiles, which the op library keeps using there. runtime/ops picks these when M and N are
// multiples of 128 and K of the depth.
//
// A block of 8 warps computes a 128 x 128 tile of C; warp w owns rows 64 (w % 2) .. +63 and
// columns 32 (w / 2) .. +31: eight 16 x 16 accumulators. K advances 64 at a time through two
// shared buffers: while the warps multiply out of one, the next A and B slices are already in
// registers and go into the other, so each step needs one barrier. Shared rows are padded (A and
// B^T: 72 elements, 144 bytes; B as stored: 136, 272 bytes) so the eight 16-byte rows one
// fragment load (ldmatrix on PTX) reads fall in different banks. nt keeps B^T (N x K) slices,
// nn B's own K x N slices (load_matrix_b: ldmatrix.trans).
// 64 deep rather than 32: on the H100 the 32-deep version (40 KiB of shared memory, 160 TFLOP/s
// at 4096^3 bf16) spent each slice's multiplications (32 mma.sync per warp) waiting for the
// next slice's loads; 64 doubles the work that hides them. The two buffers then take 72 KiB,
// more than a static `.shared` array may: the PTX target makes it dynamic shared memory
// (docs/abi.md).
#include "common.h"

constexpr uint32_t kTileM = 128, kTileN = 128;
constexpr uint32_t kThreads = 256;

// The shared-memory shape for K slices DEPTH deep (64 where a block may have 72 KiB, 32 where
// the device allows 48 KiB: Vulkan on NVIDIA).
template <uint32_t DEPTH>
struct Slices {
  static constexpr uint32_t row = DEPTH + 8;           // padded shared row (elements) of A and B^T
  static constexpr uint32_t slice = kTileM * row;      // one buffer of A (or of B^T)
  static constexpr uint32_t chunks = DEPTH / 16;       // 8-element chunks of A (and of B) per thread
};

namespace {

// B as stored (nn): K slices of DEPTH rows x 128 columns, rows padded to 136 elements (272 bytes:
// the eight rows one ldmatrix reads fall in different banks).
constexpr uint32_t kRowB = kTileN + 8;

template <typename T, uint32_t DEPTH>
using SliceBuffer = qv::shared<T, 2 * Slices<DEPTH>::slice>;

// One 16-deep step of a warp: four A tiles (rows) times two B tiles (columns). `b0` is where the
// warp's B columns start: in B^T rows (nt) or in the stored K x N slice (nn).
template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE void warp_step(const SliceBuffer<T, DEPTH>& as, const SliceBuffer<T, DEPTH>& bs, uint32_t a0,
                         uint32_t b0, qv::matrix_acc<float>& c00, qv::matrix_acc<float>& c01,
                         qv::matrix_acc<float>& c10, qv::matrix_acc<float>& c11, qv::matrix_acc<float>& c20,
                         qv::matrix_acc<float>& c21, qv::matrix_acc<float>& c30, qv::matrix_acc<float>& c31) {
  constexpr uint32_t kRow = Slices<DEPTH>::row;
  qv::matrix_b<T> b_0, b_1;
  if constexpr (B_TRANSPOSED) {
    b_0 = qv::load_matrix_b_transposed(&bs[b0], kRow);
    b_1 = qv::load_matrix_b_transposed(&bs[b0 + 16 * kRow], kRow);
  } else {
    b_0 = qv::load_matrix_b(&bs[b0], kRowB);
    b_1 = qv::load_matrix_b(&bs[b0 + 16], kRowB);
  }
  qvops::mma_4x2(as, a0, kRow, b_0, b_1, c00, c01, c10, c11, c20, c21, c30, c31);
}

// Chunk j of this thread's share of a K slice: 8 elements, at (row, column) of the A (or B^T)
// slice, 128 rows x DEPTH = 16 DEPTH chunks, chunk c = t + 256 j is row c / (DEPTH / 8), columns
// 8 (c % (DEPTH / 8)); of the B slice as stored (nn), DEPTH rows x 128, chunk c is row c / 16,
// columns 8 (c % 16).
template <uint32_t DEPTH>
QV_DEVICE uint32_t chunk_row(uint32_t t, uint32_t j) { return t / (DEPTH / 8) + 256 / (DEPTH / 8) * j; }
template <uint32_t DEPTH>
QV_DEVICE uint32_t chunk_col(uint32_t t) { return 8 * (t % (DEPTH / 8)); }
QV_DEVICE uint32_t chunk_row_b(uint32_t t, uint32_t j) { return t / 16 + 16 * j; }
QV_DEVICE uint32_t chunk_col_b(uint32_t t) { return 8 * (t % 16); }

template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE qv::vec<T, 8> load_b_chunk(const T* b, uint32_t n, uint32_t k, uint32_t n0, uint32_t k0, uint32_t t,
                                     uint32_t j) {
  if constexpr (B_TRANSPOSED) return qv::load<8>(b + (n0 + chunk_row<DEPTH>(t, j)) * k + k0 + chunk_col<DEPTH>(t));
  else return qv::load<8>(b + (k0 + chunk_row_b(t, j)) * n + n0 + chunk_col_b(t));
}
template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE void store_b_chunk(SliceBuffer<T, DEPTH>& bs, uint32_t base, uint32_t t, uint32_t j, qv::vec<T, 8> v) {
  if constexpr (B_TRANSPOSED) qv::store(&bs[base + chunk_row<DEPTH>(t, j) * Slices<DEPTH>::row + chunk_col<DEPTH>(t)], v);
  else qv::store(&bs[base + chunk_row_b(t, j) * kRowB + chunk_col_b(t)], v);
}

// This thread's share of the K slice at k0: DEPTH / 16 8-element chunks of A and as many of B
// (chunks 2 and 3 only when 64 deep).
template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE void load_slice(const T* a, const T* b, uint32_t n, uint32_t k, uint32_t m0, uint32_t n0, uint32_t k0,
                          uint32_t t, qv::vec<T, 8>& a0, qv::vec<T, 8>& a1, qv::vec<T, 8>& a2, qv::vec<T, 8>& a3,
                          qv::vec<T, 8>& b0, qv::vec<T, 8>& b1, qv::vec<T, 8>& b2, qv::vec<T, 8>& b3) {
  constexpr uint32_t step = 256 / (DEPTH / 8);   // rows between a thread's chunks of A
  const T* at = a + (m0 + chunk_row<DEPTH>(t, 0)) * k + k0 + chunk_col<DEPTH>(t);
  a0 = qv::load<8>(at);
  a1 = qv::load<8>(at + step * k);
  b0 = load_b_chunk<T, B_TRANSPOSED, DEPTH>(b, n, k, n0, k0, t, 0);
  b1 = load_b_chunk<T, B_TRANSPOSED, DEPTH>(b, n, k, n0, k0, t, 1);
  if constexpr (Slices<DEPTH>::chunks == 4) {
    a2 = qv::load<8>(at + 2 * step * k);
    a3 = qv::load<8>(at + 3 * step * k);
    b2 = load_b_chunk<T, B_TRANSPOSED, DEPTH>(b, n, k, n0, k0, t, 2);
    b3 = load_b_chunk<T, B_TRANSPOSED, DEPTH>(b, n, k, n0, k0, t, 3);
  }
}

template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE void store_slice(SliceBuffer<T, DEPTH>& as, SliceBuffer<T, DEPTH>& bs, uint32_t buf, uint32_t t,
                           qv::vec<T, 8> a0, qv::vec<T, 8> a1, qv::vec<T, 8> a2, qv::vec<T, 8> a3,
                           qv::vec<T, 8> b0, qv::vec<T, 8> b1, qv::vec<T, 8> b2, qv::vec<T, 8> b3) {
  constexpr uint32_t kRow = Slices<DEPTH>::row;
  constexpr uint32_t step = 256 / (DEPTH / 8);
  uint32_t base = buf * Slices<DEPTH>::slice;
  uint32_t at = base + chunk_row<DEPTH>(t, 0) * kRow + chunk_col<DEPTH>(t);
  qv::store(&as[at], a0);
  qv::store(&as[at + step * kRow], a1);
  store_b_chunk<T, B_TRANSPOSED, DEPTH>(bs, base, t, 0, b0);
  store_b_chunk<T, B_TRANSPOSED, DEPTH>(bs, base, t, 1, b1);
  if constexpr (Slices<DEPTH>::chunks == 4) {
    qv::store(&as[at + 2 * step * kRow], a2);
    qv::store(&as[at + 3 * step * kRow], a3);
    store_b_chunk<T, B_TRANSPOSED, DEPTH>(bs, base, t, 2, b2);
    store_b_chunk<T, B_TRANSPOSED, DEPTH>(bs, base, t, 3, b3);
  }
}

template <typename T, bool B_TRANSPOSED, uint32_t DEPTH>
QV_DEVICE void matmul_tiles(const T* a, const T* b, T* c, uint32_t n, uint32_t k) {
  constexpr uint32_t kRow = Slices<DEPTH>::row;
  SliceBuffer<T, DEPTH> as;
  SliceBuffer<T, DEPTH> bs;
  uint32_t t = qv::thread_id_x();
  uint32_t warp = t / qv::subgroup_size();
  uint32_t m0 = qv::block_id_y() * kTileM, n0 = qv::block_id_x() * kTileN;
  uint32_t wa = 64 * (warp % 2) * kRow;                               // the warp's rows of A
  uint32_t wb = B_TRANSPOSED ? 32 * (warp / 2) * kRow : 32 * (warp / 2);  // its columns of B
  qv::matrix_acc<float> c00, c01, c10, c11, c20, c21, c30, c31;
  qv::vec<T, 8> a0, a1, a2, a3, b0, b1, b2, b3;
  load_slice<T, B_TRANSPOSED, DEPTH>(a, b, n, k, m0, n0, 0, t, a0, a1, a2, a3, b0, b1, b2, b3);
  store_slice<T, B_TRANSPOSED, DEPTH>(as, bs, 0, t, a0, a1, a2, a3, b0, b1, b2, b3);
  qv::barrier();
  uint32_t buf = 0;
  // 64 deep (PTX): the next slice waits in registers while the warps multiply. 32 deep (Vulkan):
  // it goes to the other buffer first, so no value lives across the products (the driver gave
  // the register-staged form 198 registers, one block per SM).
  constexpr bool kStaged = DEPTH == 64;
  for (uint32_t k0 = DEPTH; k0 <= k; k0 += DEPTH) {
    bool more = k0 < k;
    if (more) load_slice<T, B_TRANSPOSED, DEPTH>(a, b, n, k, m0, n0, k0, t, a0, a1, a2, a3, b0, b1, b2, b3);
    if (!kStaged && more) store_slice<T, B_TRANSPOSED, DEPTH>(as, bs, 1 - buf, t, a0, a1, a2, a3, b0, b1, b2, b3);
    uint32_t base = buf * Slices<DEPTH>::slice;
    uint32_t b_step = B_TRANSPOSED ? 16 : 16 * kRowB;   // 16 deeper in B
    // The 16-deep steps written out: a loop over them stayed rolled.
    uint32_t ab = base + wa, bb = base + wb;
    warp_step<T, B_TRANSPOSED, DEPTH>(as, bs, ab, bb, c00, c01, c10, c11, c20, c21, c30, c31);
    warp_step<T, B_TRANSPOSED, DEPTH>(as, bs, ab + 16, bb + b_step, c00, c01, c10, c11, c20, c21, c30, c31);
    if constexpr (DEPTH == 64) {
      warp_step<T, B_TRANSPOSED, DEPTH>(as, bs, ab + 32, bb + 2 * b_step, c00, c01, c10, c11, c20, c21, c30, c31);
      warp_step<T, B_TRANSPOSED, DEPTH>(as, bs, ab + 48, bb + 3 * b_step, c00, c01, c10, c11, c20, c21, c30, c31);
    }
    if (kStaged && more) store_slice<T, B_TRANSPOSED, DEPTH>(as, bs, 1 - buf, t, a0, a1, a2, a3, b0, b1, b2, b3);
    qv::barrier();
    buf = 1 - buf;
  }
  uint32_t row = m0 + 64 * (warp % 2), col = n0 + 32 * (warp / 2);
  T* out = c + row * n + col;
  qv::store_matrix(out, n, c00);
  qv::store_matrix(out + 16, n, c01);
  qv::store_matrix(out + 16 * n, n, c10);
  qv::store_matrix(out + 16 * n + 16, n, c11);
  qv::store_matrix(out + 32 * n, n, c20);
  qv::store_matrix(out + 32 * n + 16, n, c21);
  qv::store_matrix(out + 48 * n, n, c30);
  qv::store_matrix(out + 48 * n + 16, n, c31);
}

}  // namespace

template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx) void matmul_tiles_nn(const T* a, const T* b, T* c, uint32_t m, uint32_t n,
                                                                  uint32_t k) {
  matmul_tiles<T, false, 64>(a, b, c, n, k);
}
template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx) void matmul_tiles_nt(const T* a, const T* b, T* c, uint32_t m, uint32_t n,
                                                                  uint32_t k) {
  matmul_tiles<T, true, 64>(a, b, c, n, k);
}

// 32 deep (40 KiB of shared memory) for the Vulkan image whose tiles are cooperative matrices:
// NVIDIA's Vulkan driver allows 48 KiB a block. K must be a multiple of 32.
template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(spirv:vulkan1.3_coopmat) void matmul_tiles_k32_nn(
    const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  matmul_tiles<T, false, 32>(a, b, c, n, k);
}
template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(spirv:vulkan1.3_coopmat) void matmul_tiles_k32_nt(
    const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  matmul_tiles<T, true, 32>(a, b, c, n, k);
}

template void matmul_tiles_nn<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_tiles_nt<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_tiles_nn<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_tiles_nt<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_tiles_k32_nn<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_tiles_k32_nt<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
