// Matrix products on Hopper's warpgroup products (docs/matrix.md "Warpgroups"), 16-bit inputs,
// float accumulation:
//   matmul_wgmma_nn<T>: C[M][N] = A[M][K] * B[K][N]
//   matmul_wgmma_nt<T>: C[M][N] = A[M][K] * B[N][K]^T
// Built for PTX sm_90a only (wgmma); runtime/ops picks these where the device's image has them
// and M is a multiple of 128, N of 256 and K of 64 (elsewhere kernels/matmul_tiles.cpp).
//
// A block of two warpgroups computes a 128 x 256 tile of C; warpgroup w owns rows 64w .. +63, all
// 256 columns: one 64 x 256 accumulator (128 floats a thread). K advances 64 at a time through a
// ring of four shared stages (A 128 x 64, B 64 x 256: 48 KiB a stage), filled by qv::copy_async
// two stages ahead of the products, which run asynchronously: a stage's four products (one per
// 16 of depth) are waited for only after the next stage's have started, so the tensor cores
// always have a batch queued. Stage kt + 2 goes into the buffer stage kt - 2 used, which both
// warpgroups have finished with once they pass the barrier of step kt (each waited for all but
// its newest batch, step kt - 1, before it).
#include "common.h"

namespace {

constexpr uint32_t kTileM = 128, kTileN = 256, kDepth = 64, kStages = 4;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kStageA = kTileM * kDepth;   // one panel of 128 rows
constexpr uint32_t kStageB = kTileN * kDepth;   // nn: 4 panels of 64 rows (k) x 64 columns; nt: 256 rows (n)
constexpr uint32_t kPanelB = 64 * kDepth;       // nn: elements between column panels
constexpr uint32_t kGroupM = 16;                // tile rows per group of the launch order
constexpr uint32_t kStagedRow = kTileN + 8;     // C staged in shared memory for the stores
static_assert(kTileM * kStagedRow <= kStages * kStageB, "C's staging fits in B's ring");

// Copy j of this thread's share of a stage: A's (j < 4) rows t / 8 + 32 j, B's rows t / 8 + 32 j
// (nt: n) or t / 32 + 8 j (nn: k), each one 16-byte chunk. Written out per j below: the front
// end's loops stayed rolled, costing the copies' issue slots.
template <typename T>
QV_DEVICE void copy_a(qv::shared<T, kStages * kStageA>& as, const T* a, uint32_t k, uint32_t m0, uint32_t k0,
                      uint32_t buf, uint32_t t, uint32_t j) {
  uint32_t row = t / 8 + 32 * j, chunk = t % 8;
  qv::copy_async(&as[buf * kStageA + qv::swizzle128(row, 8 * chunk)], a + (m0 + row) * k + k0 + 8 * chunk);
}
template <typename T, bool B_TRANSPOSED>
QV_DEVICE void copy_b(qv::shared<T, kStages * kStageB>& bs, const T* b, uint32_t n, uint32_t k, uint32_t n0,
                      uint32_t k0, uint32_t buf, uint32_t t, uint32_t j) {
  if constexpr (B_TRANSPOSED) {
    uint32_t row = t / 8 + 32 * j, chunk = t % 8;   // row: n
    qv::copy_async(&bs[buf * kStageB + qv::swizzle128(row, 8 * chunk)], b + (n0 + row) * k + k0 + 8 * chunk);
  } else {
    uint32_t row = t / 32 + 8 * j, col = t % 32;   // row: k; col: 16-byte chunk of 256 columns
    qv::copy_async(&bs[buf * kStageB + (col / 8) * kPanelB + qv::swizzle128(row, 8 * (col % 8))],
                   b + (k0 + row) * n + n0 + 8 * col);
  }
}
template <typename T, bool B_TRANSPOSED>
QV_DEVICE void load_stage(qv::shared<T, kStages * kStageA>& as, qv::shared<T, kStages * kStageB>& bs, const T* a,
                          const T* b, uint32_t n, uint32_t k, uint32_t m0, uint32_t n0, uint32_t k0, uint32_t buf,
                          uint32_t t) {
  copy_a<T>(as, a, k, m0, k0, buf, t, 0);
  copy_a<T>(as, a, k, m0, k0, buf, t, 1);
  copy_a<T>(as, a, k, m0, k0, buf, t, 2);
  copy_a<T>(as, a, k, m0, k0, buf, t, 3);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 0);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 1);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 2);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 3);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 4);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 5);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 6);
  copy_b<T, B_TRANSPOSED>(bs, b, n, k, n0, k0, buf, t, 7);
}

template <typename T, bool B_TRANSPOSED>
QV_DEVICE void matmul_wgmma(const T* a, const T* b, T* c, uint32_t m, uint32_t n, uint32_t k) {
  qv::shared<T, kStages * kStageA> as;
  qv::shared<T, kStages * kStageB> bs;
  uint32_t t = qv::thread_id_x();
  uint32_t rows = 64 * (t / 128);   // this warpgroup's rows of the tile
  // Tiles in groups of kGroupM tile rows, column by column within a group: the blocks running at
  // once share A's rows and B's columns in L2 (row by row, every wave of an 8192-wide product
  // would read all of B).
  uint32_t tiles_m = m / kTileM, tiles_n = n / kTileN, id = qv::block_id_x();
  uint32_t first = (id / (kGroupM * tiles_n)) * kGroupM;
  uint32_t group = tiles_m - first < kGroupM ? tiles_m - first : kGroupM;
  uint32_t in_group = id - first * tiles_n;
  uint32_t m0 = (first + in_group % group) * kTileM, n0 = (in_group / group) * kTileN;
  uint32_t steps = k / kDepth;
  load_stage<T, B_TRANSPOSED>(as, bs, a, b, n, k, m0, n0, 0, 0, t);
  qv::copy_async_commit();
  if (steps > 1) load_stage<T, B_TRANSPOSED>(as, bs, a, b, n, k, m0, n0, kDepth, 1, t);
  qv::copy_async_commit();
  qv::warpgroup_acc<float, kTileN> acc;
  // do / while (steps >= 1): the accumulator leaves the loop straight from its last products, so
  // LLVM keeps one set of registers for it; a for loop's exit through its header made PHI copies
  // of it while a batch was still running, and ptxas then waited for every batch.
  uint32_t kt = 0;
  do {
    qv::copy_async_wait(1);   // this thread's copies of stage kt are in
    qv::barrier();            // everyone's are; stage kt - 2's products are done
    if (kt + 2 < steps) load_stage<T, B_TRANSPOSED>(as, bs, a, b, n, k, m0, n0, (kt + 2) * kDepth, (kt + 2) % kStages, t);
    qv::copy_async_commit();
    uint32_t buf = kt % kStages;
    const T* pa = &as[buf * kStageA + 64 * rows];
    if constexpr (B_TRANSPOSED) {
      acc = qv::warpgroup_mma_bt(pa, &bs[buf * kStageB], acc);
      acc = qv::warpgroup_mma_bt(pa + 16, &bs[buf * kStageB + 16], acc);
      acc = qv::warpgroup_mma_bt(pa + 32, &bs[buf * kStageB + 32], acc);
      acc = qv::warpgroup_mma_bt(pa + 48, &bs[buf * kStageB + 48], acc);
    } else {
      acc = qv::warpgroup_mma(pa, &bs[buf * kStageB], kPanelB, acc);
      acc = qv::warpgroup_mma(pa + 16, &bs[buf * kStageB + 64 * 16], kPanelB, acc);
      acc = qv::warpgroup_mma(pa + 32, &bs[buf * kStageB + 64 * 32], kPanelB, acc);
      acc = qv::warpgroup_mma(pa + 48, &bs[buf * kStageB + 64 * 48], kPanelB, acc);
    }
    qv::warpgroup_wait(1);
    ++kt;
  } while (kt < steps);
  qv::warpgroup_wait(0);
  // C through shared memory (the ring is free once both warpgroups are past this barrier): rows
  // of 264 elements (the eight rows of one store fall in different banks), then 16-byte rows
  // out, where storing the accumulator's pairs straight to memory wrote half of each sector.
  qv::barrier();
  qv::store_warpgroup(&bs[rows * kStagedRow], kStagedRow, acc);
  qv::barrier();
  for (uint32_t j = 0; j < kTileM * kTileN / 8 / kThreads; ++j) {
    uint32_t chunk = t + kThreads * j, row = chunk / (kTileN / 8), col = 8 * (chunk % (kTileN / 8));
    qv::store(c + (m0 + row) * n + n0 + col, qv::load<8>(&bs[row * kStagedRow + col]));
  }
}

}  // namespace

template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx:sm_90a) void matmul_wgmma_nn(const T* a, const T* b, T* c, uint32_t m,
                                                                        uint32_t n, uint32_t k) {
  matmul_wgmma<T, false>(a, b, c, m, n, k);
}
template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx:sm_90a) void matmul_wgmma_nt(const T* a, const T* b, T* c, uint32_t m,
                                                                        uint32_t n, uint32_t k) {
  matmul_wgmma<T, true>(a, b, c, m, n, k);
}

template void matmul_wgmma_nn<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_wgmma_nt<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void matmul_wgmma_nn<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
template void matmul_wgmma_nt<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, uint32_t);
