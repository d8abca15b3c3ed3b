// matmul_w8a8 on Hopper's int8 warpgroup products (docs/matrix.md "Warpgroups", int8):
//   C[M][N] = float(sum_k A[m][k] * B[n][k]) * a_scale[m] * b_scale[n]
// the contract of kernels/matmul.cpp's matmul_w8a8 (row-major int8 A (M x K) and B (N x K, a
// linear layer's weight), exact int32 sums, per-row and per-column float scales applied in that
// order), for any M and N and K a multiple of 16 (the rows of A and B then start 16-byte aligned,
// as qv::copy_async needs). Built for PTX sm_90a only; runtime/ops picks it where the image has it.
//
// The shape of matmul_wgmma_nt (kernels/matmul_wgmma.cpp) in bytes: a block of two warpgroups
// computes a 128 x 256 tile of C, warpgroup w rows 64w .. +63 as one 64 x 256 int32 accumulator;
// K advances 128 (one 128-byte panel row) a stage through a ring of four 48 KiB stages (A 128 x
// 128, B 256 x 128) filled by qv::copy_async two stages ahead of the products; a stage's four
// m64n256k32 products are waited for only after the next stage's have started.
// Edges: rows past M (A) or N (B) are read from the last row instead, so every copy stays inside
// its buffer; what they produce lands in rows and columns of the tile that are not stored. The
// 16-byte chunks past K are zeroed with ordinary shared stores instead of copied, so they add 0.
// The epilogue works on registers: float(acc), times the row scales (warpgroup_rows), times the
// tile's column scales (staged in shared memory, 0 past N, read by warpgroup_cols), stored as
// pairs of floats (each warp writes whole 32-byte sectors) or, in a tile that overhangs M or N,
// element by element inside the edge.
#include "common.h"

namespace {

constexpr uint32_t kTileM = 128, kTileN = 256, kDepth = 128, kStages = 4;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kStageA = kTileM * kDepth;   // one panel of 128 rows (m) of 128 k
constexpr uint32_t kStageB = kTileN * kDepth;   // one panel of 256 rows (n) of 128 k
constexpr uint32_t kGroupM = 16;                // tile rows per group of the launch order
static_assert(kThreads == kTileN, "one thread stages each column scale of the tile");

// Copy j of this thread's share of a stage: 16 bytes of rows t / 8 + 32 j (A: j < 4, B: j < 8),
// columns k0 + 16 (t % 8) .. + 15, row-major K-wide int8 matrices; a row past the matrix's last
// (`rows` - 1) reads the last instead. Written out per j below: the front end's loops stayed
// rolled, costing the copies' issue slots.
template <uint32_t SIZE>
QV_DEVICE void copy_rows(qv::shared<int8_t, SIZE>& s, uint32_t stage, const int8_t* src, uint32_t rows, uint32_t k,
                         uint32_t r0, uint32_t k0, uint32_t t, uint32_t j) {
  uint32_t row = t / 8 + 32 * j, chunk = t % 8;
  uint32_t r = r0 + row < rows ? r0 + row : rows - 1;
  qv::copy_async(&s[stage + qv::swizzle128<int8_t>(row, 16 * chunk)], src + r * k + k0 + 16 * chunk);
}
// The same chunk, zeroed: it lies past K (only in the last stage of a K that is not a multiple
// of 128).
template <uint32_t SIZE>
QV_DEVICE void zero_rows(qv::shared<int8_t, SIZE>& s, uint32_t stage, uint32_t t, uint32_t j) {
  uint32_t at = stage + qv::swizzle128<int8_t>(t / 8 + 32 * j, 16 * (t % 8));
  qv::store(&s[at], qv::vec<int8_t, 8>(0));
  qv::store(&s[at + 8], qv::vec<int8_t, 8>(0));
}
// Every copy of a thread has the same columns (chunk t % 8), so one test per stage decides
// between copying its 12 chunks and zeroing them.
QV_DEVICE void load_stage(qv::shared<int8_t, kStages * kStageA>& as, qv::shared<int8_t, kStages * kStageB>& bs,
                          const int8_t* a, const int8_t* b, uint32_t m, uint32_t n, uint32_t k, uint32_t m0, uint32_t n0,
                          uint32_t k0, uint32_t buf, uint32_t t) {
  uint32_t sa = buf * kStageA, sb = buf * kStageB;
  if (k0 + 16 * (t % 8) < k) {
    copy_rows(as, sa, a, m, k, m0, k0, t, 0);
    copy_rows(as, sa, a, m, k, m0, k0, t, 1);
    copy_rows(as, sa, a, m, k, m0, k0, t, 2);
    copy_rows(as, sa, a, m, k, m0, k0, t, 3);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 0);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 1);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 2);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 3);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 4);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 5);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 6);
    copy_rows(bs, sb, b, n, k, n0, k0, t, 7);
  } else {
    zero_rows(as, sa, t, 0);
    zero_rows(as, sa, t, 1);
    zero_rows(as, sa, t, 2);
    zero_rows(as, sa, t, 3);
    zero_rows(bs, sb, t, 0);
    zero_rows(bs, sb, t, 1);
    zero_rows(bs, sb, t, 2);
    zero_rows(bs, sb, t, 3);
    zero_rows(bs, sb, t, 4);
    zero_rows(bs, sb, t, 5);
    zero_rows(bs, sb, t, 6);
    zero_rows(bs, sb, t, 7);
  }
}

}  // namespace

QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx:sm_90a) void matmul_w8a8_wgmma(const int8_t* a, const int8_t* b,
                                                                          const float* a_scale, const float* b_scale,
                                                                          float* c, uint32_t m, uint32_t n, uint32_t k) {
  qv::shared<int8_t, kStages * kStageA> as;
  qv::shared<int8_t, kStages * kStageB> bs;
  qv::shared<float, kTileN> col_scale;
  uint32_t t = qv::thread_id_x();
  uint32_t rows = 64 * (t / 128);   // this warpgroup's rows of the tile
  // Tiles in groups of kGroupM tile rows, column by column within a group, so that the blocks
  // running at once share A's rows and B's columns in L2 (as kernels/matmul_wgmma.cpp).
  uint32_t tiles_m = (m + kTileM - 1) / kTileM, tiles_n = (n + kTileN - 1) / kTileN, id = qv::block_id_x();
  uint32_t first = (id / (kGroupM * tiles_n)) * kGroupM;
  uint32_t group = tiles_m - first < kGroupM ? tiles_m - first : kGroupM;
  uint32_t in_group = id - first * tiles_n;
  uint32_t m0 = (first + in_group % group) * kTileM, n0 = (in_group / group) * kTileN;
  uint32_t steps = (k + kDepth - 1) / kDepth;
  load_stage(as, bs, a, b, m, n, k, m0, n0, 0, 0, t);
  qv::copy_async_commit();
  if (steps > 1) load_stage(as, bs, a, b, m, n, k, m0, n0, kDepth, 1, t);
  qv::copy_async_commit();
  col_scale[t] = n0 + t < n ? b_scale[n0 + t] : 0.0f;   // visible after the loop's first barrier
  qv::warpgroup_acc<int32_t, kTileN> acc;
  // do / while: the accumulator leaves the loop straight from its last products (docs/matrix.md
  // "Loops"), so no copy of it is made while a batch runs.
  uint32_t kt = 0;
  do {
    qv::copy_async_wait(1);   // this thread's copies of stage kt are in
    qv::barrier();            // everyone's are; stage kt - 2's products are done
    if (kt + 2 < steps) load_stage(as, bs, a, b, m, n, k, m0, n0, (kt + 2) * kDepth, (kt + 2) % kStages, t);
    qv::copy_async_commit();
    uint32_t buf = kt % kStages;
    const int8_t* pa = &as[buf * kStageA + 128 * rows];
    const int8_t* pb = &bs[buf * kStageB];
    acc = qv::warpgroup_mma_bt(pa, pb, acc);
    acc = qv::warpgroup_mma_bt(pa + 32, pb + 32, acc);
    acc = qv::warpgroup_mma_bt(pa + 64, pb + 64, acc);
    acc = qv::warpgroup_mma_bt(pa + 96, pb + 96, acc);
    qv::warpgroup_wait(1);
    ++kt;
  } while (kt < steps);
  qv::warpgroup_wait(0);
  uint32_t row0 = m0 + rows;
  qv::vec<uint32_t, 2> mine = qv::warpgroup_thread_rows();
  qv::vec<float, 2> row_scale;
  row_scale[0] = row0 + mine[0] < m ? a_scale[row0 + mine[0]] : 0.0f;
  row_scale[1] = row0 + mine[1] < m ? a_scale[row0 + mine[1]] : 0.0f;
  // (float(acc) * a_scale) * b_scale, the op's order (kernels/matmul.cpp).
  qv::warpgroup_acc<float, kTileN> out = qv::warpgroup_to_float(acc) * qv::warpgroup_rows<kTileN>(row_scale) *
                                         qv::warpgroup_cols<kTileN>(&col_scale[0]);
  if (row0 + 64 <= m && n0 + kTileN <= n && n % 2 == 0)
    qv::store_warpgroup(c + row0 * n + n0, n, out);
  else if (row0 < m)
    qv::store_warpgroup(c + row0 * n + n0, n, out, m - row0, n - n0);
}
