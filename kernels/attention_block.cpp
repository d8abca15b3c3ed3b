// Scaled dot-product attention on block tiles (docs/matrix.md "Block tiles"), half inputs, for
// the SPIR-V image with workgroup-scope cooperative matrices: the contract of kernels/attention.cpp
// (layouts, grouped-query heads, causal offset, KV caches with spare capacity) on whole tiles —
// q_len a multiple of BR and kv_len of BC (runtime/ops/ops.cpp picks this kernel only then, so no
// product reads past a row or key that exists).
//
// A block of 256 threads takes BR query rows of one (batch, head). Per step of BC keys:
//   S = Q K^T            one workgroup product (the driver stages Q and K from global memory)
//   S -> shared floats   the threads take it row by row: thread (r, c) owns row r's chunks
//                        c, c + P, ... (P = 256 / BR threads a row), scales to log2 units, masks
//   P = exp2(S - m)      P (half) -> shared; l += row sums (float, per thread, summed at the end)
//   O += P V             one workgroup product per 64 output columns, P from shared memory
// The running maximum m is raised lazily: P is computed against a maximum that may be stale by up
// to kRescaleAbove (so P <= 2^8: exact enough in half, far from its range), and only when a score
// exceeds it by more does the block raise m and scale O's rows and l by 2^(m_old - m_new). O is an
// accumulator of the whole block with no per-row scaling in Vulkan's cooperative matrices, so that
// rescale is a round trip through shared memory (store_block, scale, load_block): rare after the
// first tiles for real scores, and exact whenever it happens. The first step sets m outright (O
// and l are still zero), so a step costs four barriers and no trip of O through shared memory.
// Rounding P to half before P V is what FlashAttention does too; the op gate's bound counts it.
//
// Also built for the CPU (block tiles' portable fallback), where the op library takes it for the
// same shapes, so CI's op gate checks this kernel's logic (the lazy raise included) on every run.
//
// Shared memory (BR = 64, BC = 64): the float stage 64 x 80 (20 KiB, also O's 64 x 64 halves on
// their trips), P 64 x 80 halves (10 KiB), within NVIDIA's 48 KiB with the driver's own staging.
// Row strides are padded so a quarter-warp's 16-byte accesses cover all 32 banks once.
#include "common.h"

namespace {

constexpr uint32_t kBlockThreads = 256;
constexpr uint32_t kOutCols = 64;            // O as D / 64 accumulators of BR x 64
constexpr float kRescaleAbove = 8.0f;         // P = 2^(s - m) <= 2^8 between raises of m
constexpr float kMasked = -3.0e38f;          // a hidden key's score: exp2 gives 0

template <uint32_t BR, uint32_t BC>
struct BlockAttentionLayout {
  static constexpr uint32_t threads_per_row = kBlockThreads / BR;   // P
  static constexpr uint32_t wide = BC > kOutCols ? BC : kOutCols;
  // A quarter-warp reads 4 P consecutive floats of 8 / P rows: rows shifted by 4 P words.
  static constexpr uint32_t stage_stride = wide + 4 * threads_per_row;
  // ... and writes 4 P consecutive halves (2 P words) of 16 / P rows.
  static constexpr uint32_t p_stride = BC + 4 * threads_per_row;
  static constexpr uint32_t score_chunks = BC / 4 / threads_per_row;   // float4 chunks a thread, a step
  static constexpr uint32_t out_chunks = kOutCols / 4 / threads_per_row;
};

// O's rows times alpha (each thread's row): through the stage and back, a barrier each way.
template <uint32_t BR, uint32_t BC>
QV_DEVICE qv::block_acc<float, BR, kOutCols> scale_rows(qv::shared<float, BR * BlockAttentionLayout<BR, BC>::stage_stride>& stage,
                                                        qv::block_acc<float, BR, kOutCols> acc, uint32_t r, uint32_t c,
                                                        float alpha) {
  using L = BlockAttentionLayout<BR, BC>;
  qv::store_block(&stage[0], L::stage_stride, acc);
  qv::barrier();
  for (uint32_t j = 0; j < L::out_chunks; ++j) {
    uint32_t at = r * L::stage_stride + 4 * (c + L::threads_per_row * j);
    qv::store(&stage[at], qv::load<4>(&stage[at]) * alpha);
  }
  qv::barrier();
  acc = qv::load_block<BR, kOutCols>(&stage[0], L::stage_stride);
  qv::barrier();   // every thread has read the stage before it is written again
  return acc;
}

// O / l for the 64 columns from col0 of each of the block's rows, as T.
template <typename T, uint32_t BR, uint32_t BC>
QV_DEVICE void store_rows(qv::shared<float, BR * BlockAttentionLayout<BR, BC>::stage_stride>& stage,
                          qv::block_acc<float, BR, kOutCols> acc, T* out, uint32_t q_seq_stride, uint32_t col0,
                          uint32_t r, uint32_t c, float inv_l) {
  using L = BlockAttentionLayout<BR, BC>;
  qv::store_block(&stage[0], L::stage_stride, acc);
  qv::barrier();
  for (uint32_t j = 0; j < L::out_chunks; ++j) {
    uint32_t col = 4 * (c + L::threads_per_row * j);
    qvops::store4(out + r * q_seq_stride + col0 + col, qv::load<4>(&stage[r * L::stage_stride + col]) * inv_l);
  }
  qv::barrier();
}

// Chunk j of the thread's scores (row r, columns 4 (c + P j) ..), scaled to log2 units; keys past
// the row's position hidden when causal.
template <uint32_t BR, uint32_t BC>
QV_DEVICE qv::float4 score_chunk(const qv::shared<float, BR * BlockAttentionLayout<BR, BC>::stage_stride>& stage,
                                 uint32_t r, uint32_t c, uint32_t j, uint32_t k0, uint32_t pos, bool causal,
                                 float scale_log2) {
  using L = BlockAttentionLayout<BR, BC>;
  uint32_t col = 4 * (c + L::threads_per_row * j), key = k0 + col;
  qv::float4 x = qv::load<4>(&stage[r * L::stage_stride + col]) * scale_log2;
  if (causal && key + 3 > pos)
    x = qv::float4(key > pos ? kMasked : x[0], key + 1 > pos ? kMasked : x[1], key + 2 > pos ? kMasked : x[2],
                   key + 3 > pos ? kMasked : x[3]);
  return x;
}

// P = 2^x for chunk j into the shared P tile (as T); returns the chunk's sum (of the float values).
template <typename T, uint32_t BR, uint32_t BC>
QV_DEVICE float exp2_to_p(qv::shared<T, BR * BlockAttentionLayout<BR, BC>::p_stride>& pt, qv::float4 x, uint32_t r,
                          uint32_t c, uint32_t j) {
  using L = BlockAttentionLayout<BR, BC>;
  qv::float4 p(qv::exp2(x[0]), qv::exp2(x[1]), qv::exp2(x[2]), qv::exp2(x[3]));
  qvops::store4(&pt[r * L::p_stride + 4 * (c + L::threads_per_row * j)], p);
  return qvops::sum4(p);
}

template <typename T, uint32_t D, uint32_t BR, uint32_t BC, uint32_t KD>
QV_DEVICE void attention_block_tile(const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads,
                                    uint32_t q_len, uint32_t kv_len, uint32_t q_head_stride, uint32_t q_seq_stride,
                                    uint32_t kv_head_stride, uint32_t kv_seq_stride, uint32_t kv_batch_stride,
                                    float scale, bool causal) {
  using L = BlockAttentionLayout<BR, BC>;
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  static_assert(L::score_chunks == 4, "four chunks of scores a thread (no local arrays in the language)");
  qv::shared<float, BR * L::stage_stride> stage;
  qv::shared<T, BR * L::p_stride> pt;
  qv::shared<float, kBlockThreads> part;   // per thread: its chunks' maximum, at the end its sum

  constexpr uint32_t P = L::threads_per_row;
  const uint32_t t = qv::thread_id_x(), r = t / P, c = t % P;
  const uint32_t q0 = qv::block_id_x() * BR, h = qv::block_id_y(), b = qv::block_id_z();
  const uint32_t g = h / (q_heads / kv_heads);
  const uint32_t q_base = b * q_heads * q_len * D + h * q_head_stride + q0 * q_seq_stride;
  const T* qp = q + q_base;
  const T* kp = k + b * kv_batch_stride + g * kv_head_stride;
  const T* vp = v + b * kv_batch_stride + g * kv_head_stride;
  const uint32_t offset = kv_len - q_len;   // position of query 0 (host: kv_len >= q_len if causal)
  const uint32_t pos = offset + q0 + r;     // this thread's row's position
  const uint32_t kv_end = causal && offset + q0 + BR < kv_len ? offset + q0 + BR : kv_len;
  const uint32_t tiles = (kv_end + BC - 1) / BC;
  const float scale_log2 = scale * 1.44269504f;

  float m = kMasked, l = 0.0f;
  qv::block_acc<float, BR, kOutCols> o0, o1;   // o1: D = 128 only
  for (uint32_t i = 0; i < tiles; ++i) {
    const uint32_t k0 = i * BC;
    qv::block_acc<float, BR, BC> s;
    for (uint32_t d0 = 0; d0 < D; d0 += KD)
      s = qv::block_mma_bt<KD>(qp + d0, q_seq_stride, kp + k0 * kv_seq_stride + d0, kv_seq_stride, s);
    qv::barrier();   // the last step's P V has read P, and every thread its scores
    qv::store_block(&stage[0], L::stage_stride, s);
    qv::barrier();

    // The thread's four chunks of scores, in log2 units, hidden keys masked.
    qv::float4 x0 = score_chunk<BR, BC>(stage, r, c, 0, k0, pos, causal, scale_log2);
    qv::float4 x1 = score_chunk<BR, BC>(stage, r, c, 1, k0, pos, causal, scale_log2);
    qv::float4 x2 = score_chunk<BR, BC>(stage, r, c, 2, k0, pos, causal, scale_log2);
    qv::float4 x3 = score_chunk<BR, BC>(stage, r, c, 3, k0, pos, causal, scale_log2);
    float top = qv::max(qv::max(qvops::max4(x0), qvops::max4(x1)), qv::max(qvops::max4(x2), qvops::max4(x3)));
    part[t] = top;
    // Whether any score of the block is more than kRescaleAbove over its row's maximum: the whole
    // block takes the raise (its round trips are block operations). A one-element qv::shared flag
    // instead broke this kernel through NVIDIA's Vulkan driver (docs/perf/NOTES.md).
    const bool raise = qv::block_max(i > 0 ? top - m : 0.0f) > kRescaleAbove;
    qv::barrier();

    float row_top = part[r * P];
    for (uint32_t j = 1; j < P; ++j) row_top = qv::max(row_top, part[r * P + j]);
    if (i == 0) {
      m = row_top;   // O and l are zero: nothing to scale
    } else if (raise) {
      float m_new = qv::max(m, row_top), alpha = qv::exp2(m - m_new);
      m = m_new;
      l *= alpha;
      o0 = scale_rows<BR, BC>(stage, o0, r, c, alpha);
      if constexpr (D == 128) o1 = scale_rows<BR, BC>(stage, o1, r, c, alpha);
    }
    l += exp2_to_p<T, BR, BC>(pt, x0 - m, r, c, 0) + exp2_to_p<T, BR, BC>(pt, x1 - m, r, c, 1) +
         exp2_to_p<T, BR, BC>(pt, x2 - m, r, c, 2) + exp2_to_p<T, BR, BC>(pt, x3 - m, r, c, 3);
    qv::barrier();
    o0 = qv::block_mma<BC>(&pt[0], L::p_stride, vp + k0 * kv_seq_stride, kv_seq_stride, o0);
    if constexpr (D == 128) o1 = qv::block_mma<BC>(&pt[0], L::p_stride, vp + k0 * kv_seq_stride + kOutCols, kv_seq_stride, o1);
  }

  qv::barrier();   // the last P V has read P; part is free
  part[t] = l;
  qv::barrier();
  float row_l = 0.0f;
  for (uint32_t j = 0; j < P; ++j) row_l += part[r * P + j];
  T* op = o + q_base;
  store_rows<T, BR, BC>(stage, o0, op, q_seq_stride, 0, r, c, 1.0f / row_l);
  if constexpr (D == 128) store_rows<T, BR, BC>(stage, o1, op, q_seq_stride, kOutCols, r, c, 1.0f / row_l);
}

}  // namespace

// BR x BC: query rows a block x keys a step; KD: depth of each Q K^T product. The sequence
// strides are specialization constants (QV_SPECIALIZE): NVIDIA's driver stages cooperative
// operands well only for constant strides (docs/perf/NOTES.md, block matmuls).
#define QV_ATTENTION_BLOCK_KERNEL(NAME, BR, BC, KD)                                                                \
  template <typename T, uint32_t D>                                                                                \
  QV_KERNEL QV_BLOCK(kBlockThreads) QV_TARGETS(spirv:vulkan1.3_coopmat, cpu) void NAME(                             \
      const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads, uint32_t q_len, uint32_t kv_len, \
      uint32_t q_head_stride, QV_SPECIALIZE uint32_t q_seq_stride, uint32_t kv_head_stride,                        \
      QV_SPECIALIZE uint32_t kv_seq_stride, uint32_t kv_batch_stride, float scale, bool causal) {                  \
    attention_block_tile<T, D, BR, BC, KD>(q, k, v, o, q_heads, kv_heads, q_len, kv_len, q_head_stride, q_seq_stride, \
                                           kv_head_stride, kv_seq_stride, kv_batch_stride, scale, causal);          \
  }                                                                                                                \
  template void NAME<qv::half, 64>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, \
                                   uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool); \
  template void NAME<qv::half, 128>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, \
                                    uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);

// 64 x 64 with Q K^T 64 deep: on the H100 (driver 580) 59.6 TFLOP/s, against 59.5 for 128 deep
// (more registers) and 53.5 for 32 (docs/perf/NOTES.md). Larger tiles do not fit 48 KiB.
QV_ATTENTION_BLOCK_KERNEL(attention_block, 64, 64, 64)
