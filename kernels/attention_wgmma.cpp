// Scaled dot-product attention on Hopper's warpgroup products (docs/matrix.md "Warpgroups"), for
// half / bf16 inputs: the contract of kernels/attention.cpp (layouts, grouped-query heads, causal
// offset, KV caches with spare capacity), FlashAttention-3's ping-pong schedule with wgmma.
// Built for PTX sm_90a only (runtime/ops picks it where the loaded image has it).
//
// A block of two warpgroups takes 128 query rows of one (batch, head); warpgroup w owns rows
// 64 w .. + 63. K and V stream through shared memory 128 keys at a time (two buffers each, filled
// by qv::copy_async). Per tile, per warpgroup:
//   S = Q K^T (64 x 128: D / 16 products from swizzled panels), scaled by scale * log2(e)
//   m' = max(m, rowmax S);  P = exp2(S - m');  l = l exp2(m - m') + rowsum P
//   O = O exp2(m - m') + T(P) V   (P through a swizzled panel of shared memory: wgmma's A)
// and the two warpgroups take turns: one's products run while the other computes its softmax
// (attention_block says how). The row statistics are each thread's two rows
// (qv::warpgroup_row_max): the maximum meets the three other threads of a row by subgroup
// shuffles (this kernel is PTX only: 32-lane subgroups), the sum stays per thread until the end.
// Masked scores (the causal diagonal, keys past kv_len) become -3e38
// (qv::warpgroup_mask_columns), which exp2 takes to 0: every row's maximum is finite from the
// first tile on, which always holds key 0. A negative scale negates Q once (S = (-Q) K^T).
#include "common.h"

namespace {

constexpr uint32_t kRows = 128;    // query rows per block, 64 per warpgroup
constexpr uint32_t kKeys = 128;    // keys per tile
constexpr uint32_t kThreads = 256;
constexpr uint32_t kPanel = 64 * 128;   // a panel of 128 rows (Q, K, V tiles)
constexpr float kMasked = -3.0e38f;   // a masked score: exp2 of it less any finite maximum is 0

// Thread t's c-th chunk (c < D / 16) of a 128-row tile of D columns, 8 elements each (Q, by the
// whole block): tile row and column, and where it goes in the tile's swizzled panels (64
// columns each).
template <uint32_t D>
QV_DEVICE uint32_t tile_row(uint32_t t, uint32_t c) { return (t + kThreads * c) / (D / 8); }
template <uint32_t D>
QV_DEVICE uint32_t tile_col(uint32_t t, uint32_t c) { return 8 * ((t + kThreads * c) % (D / 8)); }
template <uint32_t D>
QV_DEVICE uint32_t tile_at(uint32_t t, uint32_t c) {
  uint32_t col = tile_col<D>(t, c);
  return (col / 64) * kPanel + qv::swizzle128(tile_row<D>(t, c), col % 64);
}

// A whole tile of K or V (`src`: keys k0 .. k0 + 127) into buffer `buf` of `dst` by one
// warpgroup (t < 128): thread t copies 8 columns at column 8 (t % (D / 8)) of rows
// t / (D / 8) + kStep c, c < 128 D / 1024 chunks. A thread's chunks share their column and their
// row's swizzle (kStep is a multiple of 8), so chunk c is at a constant distance from chunk 0 in
// shared memory and kStep rows further in `src`: no per-chunk addresses to keep in registers.
// Keys at or past kv_len become zeros (the spare capacity of a KV cache may hold anything, NaN
// included); a whole tile below kv_len is copied without a check per chunk.
template <typename T, uint32_t D, bool CHECK>
QV_DEVICE void load_chunk(qv::shared<T, 2 * kKeys * D>& dst, const T* src, uint32_t at, uint32_t row, uint32_t step,
                          uint32_t kv_len, uint32_t c) {
  constexpr uint32_t kStep = 128 / (D / 8);
  if (!CHECK || row + kStep * c < kv_len) qv::copy_async(&dst[at + 64 * kStep * c], src + step * c);
  else qv::store(&dst[at + 64 * kStep * c], qv::vec<T, 8>());
}
// Chunks c0 .. c0 + 3, written out (the front end's loops stay rolled).
template <typename T, uint32_t D, bool CHECK>
QV_DEVICE void load_chunks4(qv::shared<T, 2 * kKeys * D>& dst, const T* src, uint32_t at, uint32_t row, uint32_t step,
                            uint32_t kv_len, uint32_t c0) {
  load_chunk<T, D, CHECK>(dst, src, at, row, step, kv_len, c0);
  load_chunk<T, D, CHECK>(dst, src, at, row, step, kv_len, c0 + 1);
  load_chunk<T, D, CHECK>(dst, src, at, row, step, kv_len, c0 + 2);
  load_chunk<T, D, CHECK>(dst, src, at, row, step, kv_len, c0 + 3);
}
template <typename T, uint32_t D, bool CHECK>
QV_DEVICE void load_chunks(qv::shared<T, 2 * kKeys * D>& dst, const T* src, uint32_t at, uint32_t row, uint32_t step,
                           uint32_t kv_len) {
  load_chunks4<T, D, CHECK>(dst, src, at, row, step, kv_len, 0);
  load_chunks4<T, D, CHECK>(dst, src, at, row, step, kv_len, 4);
  if constexpr (D == 128) {
    load_chunks4<T, D, CHECK>(dst, src, at, row, step, kv_len, 8);
    load_chunks4<T, D, CHECK>(dst, src, at, row, step, kv_len, 12);
  }
}
template <typename T, uint32_t D>
QV_DEVICE void load_tile(qv::shared<T, 2 * kKeys * D>& dst, const T* src, uint32_t kv_base, uint32_t kv_seq_stride,
                         uint32_t kv_len, uint32_t k0, uint32_t buf, uint32_t t) {
  constexpr uint32_t kStep = 128 / (D / 8);
  uint32_t row = k0 + t / (D / 8), col = 8 * (t % (D / 8));
  uint32_t at = buf * kKeys * D + (col / 64) * kPanel + qv::swizzle128(t / (D / 8), col % 64);
  const T* p = src + kv_base + row * kv_seq_stride + col;
  if (k0 + kKeys <= kv_len) load_chunks<T, D, false>(dst, p, at, row, kStep * kv_seq_stride, kv_len);
  else load_chunks<T, D, true>(dst, p, at, row, kStep * kv_seq_stride, kv_len);
}

// The maximum over the four threads holding a row (linear ids t ^ 1, t ^ 2).
QV_DEVICE float row_across(float v, bool max) {
  float a = max ? qv::max(v, qv::subgroup_shuffle_xor(v, 1)) : v + qv::subgroup_shuffle_xor(v, 1);
  return max ? qv::max(a, qv::subgroup_shuffle_xor(a, 2)) : a + qv::subgroup_shuffle_xor(a, 2);
}

// S = Q K^T for the warpgroup's rows at `qa` and the K buffer at `kb`: D / 16 products, written
// out (in a loop the accumulator went through copies ptxas had to wait for); started, not waited
// for (the caller's warpgroup_wait does).
template <typename T, uint32_t D>
QV_DEVICE qv::warpgroup_acc<float, kKeys> scores(const qv::shared<T, kRows * D>& qs, const qv::shared<T, 2 * kKeys * D>& ks,
                                                 uint32_t qa, uint32_t kb) {
  qv::warpgroup_acc<float, kKeys> s;
  s = qv::warpgroup_mma_bt(&qs[qa], &ks[kb], s);
  s = qv::warpgroup_mma_bt(&qs[qa + 16], &ks[kb + 16], s);
  s = qv::warpgroup_mma_bt(&qs[qa + 32], &ks[kb + 32], s);
  s = qv::warpgroup_mma_bt(&qs[qa + 48], &ks[kb + 48], s);
  if constexpr (D == 128) {
    s = qv::warpgroup_mma_bt(&qs[kPanel + qa], &ks[kb + kPanel], s);
    s = qv::warpgroup_mma_bt(&qs[kPanel + qa + 16], &ks[kb + kPanel + 16], s);
    s = qv::warpgroup_mma_bt(&qs[kPanel + qa + 32], &ks[kb + kPanel + 32], s);
    s = qv::warpgroup_mma_bt(&qs[kPanel + qa + 48], &ks[kb + kPanel + 48], s);
  }
  return s;
}

// O + T(P) V for the warpgroup's P panels at `pa` and the V buffer at `vb`: 8 products of 16 keys,
// started, not waited for.
template <typename T, uint32_t D>
QV_DEVICE qv::warpgroup_acc<float, D> weigh(const qv::shared<T, kRows * kKeys>& ps, const qv::shared<T, 2 * kKeys * D>& vs,
                                            uint32_t pa, uint32_t vb, qv::warpgroup_acc<float, D> acc) {
  constexpr uint32_t kP = 64 * 64;   // P's panels: 64 rows x 64 keys
  acc = qv::warpgroup_mma(&ps[pa], &vs[vb], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + 16], &vs[vb + 64 * 16], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + 32], &vs[vb + 64 * 32], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + 48], &vs[vb + 64 * 48], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + kP], &vs[vb + 64 * 64], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + kP + 16], &vs[vb + 64 * 80], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + kP + 32], &vs[vb + 64 * 96], kPanel, acc);
  acc = qv::warpgroup_mma(&ps[pa + kP + 48], &vs[vb + 64 * 112], kPanel, acc);
  return acc;
}

// One tile's softmax for the warpgroup (keys k0 .. k0 + 127 of scores s): the running maximum
// (m0, m1) and sums l, O's factor alpha for the next products, P = exp2(c s - m) into the
// warpgroup's panels at `pa`. m is kept scaled (scores times c = |scale| log2 e); P is one fused
// multiply-add and an exp2 per score.
template <typename T>
QV_DEVICE void softmax_tile(qv::warpgroup_acc<float, kKeys>& s, qv::vec<float, 2>& alpha, float& m0, float& m1,
                            qv::vec<float, 2>& l, qv::shared<T, kRows * kKeys>& ps, uint32_t pa, uint32_t k0,
                            uint32_t row_first, uint32_t kv_len, bool causal, float c) {
  // Key k0 + j is visible to query row_first + r iff j <= row_first + r - k0, and exists iff
  // j <= kv_len - 1 - k0.
  if ((causal && k0 + kKeys - 1 > row_first) || k0 + kKeys > kv_len) {
    int32_t end = int32_t(kv_len) - 1 - int32_t(k0);
    qv::vec<int32_t, 2> last;
    last[0] = end;
    last[1] = end;
    if (causal) {
      const qv::vec<uint32_t, 2> rows = qv::warpgroup_thread_rows();
      int32_t diag = int32_t(row_first) - int32_t(k0);
      int32_t r0 = diag + int32_t(rows[0]), r1 = diag + int32_t(rows[1]);
      last[0] = r0 < end ? r0 : end;
      last[1] = r1 < end ? r1 : end;
    }
    s = qv::warpgroup_mask_columns(s, last, kMasked);
  }
  qv::vec<float, 2> part = qv::warpgroup_row_max(s);
  float n0 = qv::max(m0, row_across(part[0], true) * c), n1 = qv::max(m1, row_across(part[1], true) * c);
  qv::vec<float, 2> minus_m;
  minus_m[0] = -n0;
  minus_m[1] = -n1;
  alpha[0] = qv::exp2_ftz(m0 - n0);
  alpha[1] = qv::exp2_ftz(m1 - n1);
  m0 = n0;
  m1 = n1;
  s = qv::exp2_ftz(qv::fma(s, qv::warpgroup_acc<float, kKeys>(c), qv::warpgroup_rows<kKeys>(minus_m)));
  qv::vec<float, 2> sum = qv::warpgroup_row_sum(s);
  l[0] = l[0] * alpha[0] + sum[0];
  l[1] = l[1] * alpha[1] + sum[1];
  qv::store_warpgroup_swizzled(&ps[pa], 64 * 64, s);
}

// A warpgroup's product phase for tile j (0 <= j <= tiles): O = alpha O + P_{j-1} V_{j-1} (PV,
// j >= 1) and S_j = Q K_j^T (S, j < tiles) started, then, while they run, the warpgroup's share
// of the copies (warpgroup 0: K_{j+1}, warpgroup 1: V_j; `t` its thread, into buffers these
// products do not read), then both waited for. The products take less time than the other
// warpgroup's softmax, so O's rescaling and the copies are here, off the softmax that bounds
// each phase.
template <typename T, uint32_t D, bool PV, bool S>
QV_DEVICE void products(const qv::shared<T, kRows * D>& qs, qv::shared<T, 2 * kKeys * D>& ks,
                        qv::shared<T, 2 * kKeys * D>& vs, const qv::shared<T, kRows * kKeys>& ps, const T* k,
                        const T* v, uint32_t kv_base, uint32_t kv_seq_stride, uint32_t kv_len, uint32_t tiles,
                        uint32_t j, uint32_t wg, uint32_t t, uint32_t qa, uint32_t pa, qv::vec<float, 2> alpha,
                        qv::warpgroup_acc<float, D>& acc, qv::warpgroup_acc<float, kKeys>& s) {
  if constexpr (PV) {
    acc *= qv::warpgroup_rows<D>(alpha);
    acc = weigh<T, D>(ps, vs, pa, (j - 1) % 2 * kKeys * D, acc);
  }
  if constexpr (S) s = scores<T, D>(qs, ks, qa, j % 2 * kKeys * D);
  qv::warpgroup_commit();   // closed next to the products (ptxas fences a batch closed later)
  if (wg == 0) {
    if (j + 1 < tiles) load_tile<T, D>(ks, k, kv_base, kv_seq_stride, kv_len, (j + 1) * kKeys, (j + 1) % 2, t);
  } else if (j < tiles) {
    load_tile<T, D>(vs, v, kv_base, kv_seq_stride, kv_len, j * kKeys, j % 2, t);
  }
  qv::copy_async_commit();
  qv::warpgroup_wait(0);
  qv::copy_async_wait(0);
}

template <typename T, uint32_t D>
QV_DEVICE void attention_block(const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads,
                               uint32_t q_len, uint32_t kv_len, uint32_t q_head_stride, uint32_t q_seq_stride,
                               uint32_t kv_head_stride, uint32_t kv_seq_stride, uint32_t kv_batch_stride, float scale,
                               bool causal) {
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  qv::shared<T, kRows * D> qs;         // D / 64 panels of 128 rows
  qv::shared<T, 2 * kKeys * D> ks;     // two buffers of D / 64 panels of 128 keys
  qv::shared<T, 2 * kKeys * D> vs;     // the same for V (rows of k for the P V products)
  qv::shared<T, kRows * kKeys> ps;     // per warpgroup, 2 panels of 64 rows: P

  uint32_t t = qv::thread_id_x();
  uint32_t wg = t / 128, wt = t % 128;
  uint32_t q0 = qv::block_id_x() * kRows;
  uint32_t h = qv::block_id_y(), b = qv::block_id_z();
  uint32_t g = h / (q_heads / kv_heads);
  uint32_t q_base = b * q_heads * q_len * D + h * q_head_stride;
  uint32_t kv_base = b * kv_batch_stride + g * kv_head_stride;
  uint32_t offset = kv_len - q_len;   // absolute position of query 0 (host: kv_len >= q_len if causal)
  uint32_t last_row = q0 + kRows < q_len ? q0 + kRows : q_len;
  uint32_t kv_end = causal && offset + last_row < kv_len ? offset + last_row : kv_len;
  uint32_t tiles = (kv_end + kKeys - 1) / kKeys;   // >= 1: key 0 is visible to every row

  // Q (rows past q_len: zeros) by every thread, K's first tile by warpgroup 0.
  for (uint32_t c = 0; c < D / 16; ++c) {
    uint32_t i = tile_row<D>(t, c);
    uint32_t at = tile_at<D>(t, c);
    if (q0 + i < q_len) qv::copy_async(&qs[at], q + q_base + (q0 + i) * q_seq_stride + tile_col<D>(t, c));
    else qv::store(&qs[at], qv::vec<T, 8>());
  }
  if (wg == 0) load_tile<T, D>(ks, k, kv_base, kv_seq_stride, kv_len, 0, 0, wt);
  qv::copy_async_commit();
  qv::copy_async_wait(0);
  const float scale_log2 = scale * 1.44269504f;
  const float c = scale_log2 < 0.0f ? -scale_log2 : scale_log2;
  if (scale_log2 < 0.0f) {
    // S = (-Q) K^T then, and P = exp2(|c| S - m) in every tile: negating Q once here (exact)
    // keeps a select per score out of every tile.
    qv::barrier();   // every thread's share of Q landed
    for (uint32_t i = t; i < kRows * D; i += kThreads) qs[i] = qvops::from_f32<T>(-qvops::to_f32(qs[i]));
  }
  qv::barrier();

  const uint32_t row_first = offset + q0 + 64 * wg;   // position of the warpgroup's first query
  const uint32_t qa = 64 * 64 * wg, pa = 64 * kKeys * wg;   // its rows of Q, its P
  // m starts below every visible scaled score, so the first tile's alpha is 0 (every row sees key 0).
  float m0 = -3.0e38f, m1 = -3.0e38f;
  qv::vec<float, 2> l, alpha;
  qv::warpgroup_acc<float, D> acc;
  qv::warpgroup_acc<float, kKeys> s;

  // Ping-pong (FlashAttention-3's inter-warpgroup schedule): the block runs in phases between
  // barriers, and in each phase one warpgroup's products run on the tensor cores while the other
  // warpgroup does a softmax. Warpgroup 0 runs its products for tile j (`products` above) in
  // phase 2j and tile j's softmax in 2j + 1; warpgroup 1 one phase later. Every barrier is
  // reached by both warpgroups (the roles are branches between them). The copies of phase p are
  // waited for before its closing barrier and read from phase p + 1 on: K_{j+1} (phase 2j)
  // replaces K_{j-1}, last read in phase 2j - 1; V_j (phase 2j + 1) replaces V_{j-2}, last read
  // by the products of tile j - 1 in phases 2j - 2 and 2j - 1.
  if (wg == 0) products<T, D, false, true>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, 0, wg, wt, qa, pa, alpha, acc, s);
  qv::barrier();
  if (wg == 0) softmax_tile<T>(s, alpha, m0, m1, l, ps, pa, 0, row_first, kv_len, causal, c);
  else products<T, D, false, true>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, 0, wg, wt, qa, pa, alpha, acc, s);
  qv::barrier();
  uint32_t j = 1;
  if (tiles > 1) {
    do {   // phases 2j and 2j + 1 (do / while: O leaves the loop from its last products)
      if (wg == 0) products<T, D, true, true>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, j, wg, wt, qa, pa, alpha, acc, s);
      else softmax_tile<T>(s, alpha, m0, m1, l, ps, pa, (j - 1) * kKeys, row_first, kv_len, causal, c);
      qv::barrier();
      if (wg == 0) softmax_tile<T>(s, alpha, m0, m1, l, ps, pa, j * kKeys, row_first, kv_len, causal, c);
      else products<T, D, true, true>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, j, wg, wt, qa, pa, alpha, acc, s);
      qv::barrier();
      ++j;
    } while (j < tiles);
  }
  // Phases 2n and 2n + 1: the last tile's softmax (warpgroup 1) and O's last products.
  if (wg == 0) products<T, D, true, false>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, tiles, wg, wt, qa, pa, alpha, acc, s);
  else softmax_tile<T>(s, alpha, m0, m1, l, ps, pa, (tiles - 1) * kKeys, row_first, kv_len, causal, c);
  qv::barrier();
  if (wg == 1) products<T, D, true, false>(qs, ks, vs, ps, k, v, kv_base, kv_seq_stride, kv_len, tiles, tiles, wg, wt, qa, pa, alpha, acc, s);

  // O / l through shared memory (K's buffers, last read in phase 2n - 1: rows of D + 8), then
  // rows below q_len out.
  // O times 1 / l: two divisions a thread, not one per element of O (D / 2 IEEE divisions, each
  // a refinement sequence behind a branch: ~600 instructions a thread at D = 128, in every
  // block's epilogue — which the short blocks of causal attention hardly amortise).
  qv::vec<float, 2> inv_total;
  inv_total[0] = 1.0f / row_across(l[0], false);
  inv_total[1] = 1.0f / row_across(l[1], false);
  constexpr uint32_t kRow = D + 8;
  qv::store_warpgroup(&ks[64 * wg * kRow], kRow, acc * qv::warpgroup_rows<D>(inv_total));
  qv::barrier();
  for (uint32_t c = t; c < kRows * D / 8; c += kThreads) {
    uint32_t i = c / (D / 8), d = 8 * (c % (D / 8));
    if (q0 + i < q_len) qv::store(o + q_base + (q0 + i) * q_seq_stride + d, qv::load<8>(&ks[i * kRow + d]));
  }
}

}  // namespace

template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kThreads) QV_TARGETS(ptx:sm_90a) void attention_wgmma(
    const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads, uint32_t q_len, uint32_t kv_len,
    uint32_t q_head_stride, uint32_t q_seq_stride, uint32_t kv_head_stride, uint32_t kv_seq_stride,
    uint32_t kv_batch_stride, float scale, bool causal) {
  attention_block<T, D>(q, k, v, o, q_heads, kv_heads, q_len, kv_len, q_head_stride, q_seq_stride, kv_head_stride,
                        kv_seq_stride, kv_batch_stride, scale, causal);
}

#define QV_ATTENTION_WGMMA(T, D)                                                                                  \
  template void attention_wgmma<T, D>(const T*, const T*, const T*, T*, uint32_t, uint32_t, uint32_t, uint32_t, \
                                      uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);
QV_ATTENTION_WGMMA(qv::bf16, 64)
QV_ATTENTION_WGMMA(qv::bf16, 128)
QV_ATTENTION_WGMMA(qv::half, 64)
QV_ATTENTION_WGMMA(qv::half, 128)
