// Scaled dot-product attention, flash style: K and V stream through shared memory in tiles of
// kKeys keys while each query row keeps a running maximum m, a running denominator l and an
// unnormalised output accumulator (online softmax), so no score matrix is ever stored.
//
//   o[b, h, i, :] = sum_j softmax_j(scale * q[b, h, i, :] . k[b, g, j, :]) v[b, g, j, :]
//   g = h / (q_heads / kv_heads)                      (grouped-query attention)
//   causal: key j is visible to query i when j <= kv_len - q_len + i, i.e. the queries are the
//   last q_len positions of a KV sequence (a KV cache) of kv_len positions.
//
// Layout: head_dim D contiguous; the host passes element strides for heads and positions, so
// [batch][heads][seq][D] and [batch][seq][heads][D] (and KV caches with spare capacity) both work.
// q and o share their layout; q's batch stride is q_heads * q_len * D.
//
// One block (256 threads) per BQ = 2048 / D query rows of one (batch, head). Thread t owns
// output column d = t % D of the rows t / D + R * jj (R = 256 / D, jj = 0..7): eight float
// accumulators in registers.
#include "common.h"

using qvops::from_f32;
using qvops::kLowest;
using qvops::to_f32;

constexpr uint32_t kAttnThreads = 256;
constexpr uint32_t kKeys = 16;   // keys per shared tile
constexpr uint32_t kOwned = 8;   // output rows per thread

namespace {

// Where each part of the block's shared memory lives: one qv::shared array carved by offsets.
template <uint32_t D>
struct Smem {
  static constexpr uint32_t BQ = kAttnThreads * kOwned / D;   // query rows per block
  static constexpr uint32_t KS = D + 1;   // padded K row: the score loop reads 16 different rows
                                          // without bank conflicts
  static constexpr uint32_t q = 0;                      // [BQ][D] queries, pre-multiplied by scale
  static constexpr uint32_t k = q + BQ * D;             // [kKeys][KS] the current K tile
  static constexpr uint32_t v = k + kKeys * KS;         // [kKeys][D] the current V tile
  static constexpr uint32_t p = v + kKeys * D;          // [BQ][kKeys] scores, then probabilities
  static constexpr uint32_t m = p + BQ * kKeys;         // [BQ] running row maximum
  static constexpr uint32_t l = m + BQ;                 // [BQ] running row denominator
  static constexpr uint32_t alpha = l + BQ;             // [BQ] exp(m_old - m_new) of the tile
  static constexpr uint32_t size = alpha + BQ;
};

// acc * alpha + sum_j p[i, j] v[j, d]: one owned output element after one key tile.
template <uint32_t D, uint32_t N>
QV_DEVICE float rescale_and_accumulate(float acc, const qv::shared<float, N>& smem, uint32_t i, uint32_t d) {
  using S = Smem<D>;
  float sum = acc * smem[S::alpha + i];
  for (uint32_t j = 0; j < kKeys; ++j) sum += smem[S::p + i * kKeys + j] * smem[S::v + j * D + d];
  return sum;
}

template <typename T, uint32_t D, uint32_t N>
QV_DEVICE void store_row(T* o, const qv::shared<float, N>& smem, uint32_t o_base, uint32_t q_seq_stride, uint32_t q0,
                         uint32_t q_len, uint32_t i, uint32_t d, float acc) {
  if (q0 + i < q_len) o[o_base + (q0 + i) * q_seq_stride + d] = from_f32<T>(acc / smem[Smem<D>::l + i]);
}

template <typename T, uint32_t D>
QV_DEVICE void attention_block(const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads,
                               uint32_t q_len, uint32_t kv_len, uint32_t q_head_stride, uint32_t q_seq_stride,
                               uint32_t kv_head_stride, uint32_t kv_seq_stride, uint32_t kv_batch_stride,
                               float scale, bool causal) {
  using S = Smem<D>;
  constexpr uint32_t BQ = S::BQ;
  constexpr uint32_t R = kAttnThreads / D;   // row step between a thread's rows
  qv::shared<float, S::size> smem;

  uint32_t t = qv::thread_id_x();
  uint32_t q0 = qv::block_id_x() * BQ;
  uint32_t h = qv::block_id_y(), b = qv::block_id_z();
  uint32_t g = h / (q_heads / kv_heads);
  uint32_t q_base = b * q_heads * q_len * D + h * q_head_stride;
  uint32_t kv_base = b * kv_batch_stride + g * kv_head_stride;
  uint32_t offset = kv_len - q_len;   // absolute position of query 0 (host: kv_len >= q_len if causal)

  for (uint32_t e = t; e < BQ * D; e += kAttnThreads) {
    uint32_t i = e / D, d = e % D;
    smem[S::q + e] = q0 + i < q_len ? to_f32(q[q_base + (q0 + i) * q_seq_stride + d]) * scale : 0.0f;
  }
  if (t < BQ) {
    smem[S::m + t] = kLowest;
    smem[S::l + t] = 0.0f;
  }
  // Keys past the last visible one of the block's last row are skipped entirely.
  uint32_t last_row = q0 + BQ < q_len ? q0 + BQ : q_len;
  uint32_t kv_end = causal && offset + last_row < kv_len ? offset + last_row : kv_len;

  uint32_t d = t % D, r0 = t / D;
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  for (uint32_t k0 = 0; k0 < kv_end; k0 += kKeys) {
    qv::barrier();   // the previous tile's readers are done (and, first time, q/m/l are set)
    for (uint32_t e = t; e < kKeys * D; e += kAttnThreads) {
      uint32_t j = e / D, dd = e % D;
      bool in = k0 + j < kv_len;
      uint32_t at = kv_base + (k0 + j) * kv_seq_stride + dd;
      smem[S::k + j * S::KS + dd] = in ? to_f32(k[at]) : 0.0f;
      smem[S::v + e] = in ? to_f32(v[at]) : 0.0f;
    }
    qv::barrier();
    for (uint32_t e = t; e < BQ * kKeys; e += kAttnThreads) {
      uint32_t i = e / kKeys, j = e % kKeys;
      float s = 0.0f;
      for (uint32_t dd = 0; dd < D; ++dd) s += smem[S::q + i * D + dd] * smem[S::k + j * S::KS + dd];
      bool masked = k0 + j >= kv_len || (causal && k0 + j > offset + q0 + i);
      if (masked) s = kLowest;
      smem[S::p + e] = s;
    }
    qv::barrier();
    if (t < BQ) {   // online softmax update of row t
      float m_old = smem[S::m + t];
      float m_new = m_old;
      for (uint32_t j = 0; j < kKeys; ++j) m_new = qv::max(m_new, smem[S::p + t * kKeys + j]);
      float row_sum = 0.0f;
      for (uint32_t j = 0; j < kKeys; ++j) {
        float s = smem[S::p + t * kKeys + j];
        float e = s == kLowest ? 0.0f : qv::exp(s - m_new);
        smem[S::p + t * kKeys + j] = e;
        row_sum += e;
      }
      float a = qv::exp(m_old - m_new);   // 0 when m_old is still kLowest and m_new is real
      smem[S::alpha + t] = a;
      smem[S::l + t] = smem[S::l + t] * a + row_sum;
      smem[S::m + t] = m_new;
    }
    qv::barrier();
    a0 = rescale_and_accumulate<D>(a0, smem, r0, d);
    a1 = rescale_and_accumulate<D>(a1, smem, r0 + R, d);
    a2 = rescale_and_accumulate<D>(a2, smem, r0 + 2 * R, d);
    a3 = rescale_and_accumulate<D>(a3, smem, r0 + 3 * R, d);
    a4 = rescale_and_accumulate<D>(a4, smem, r0 + 4 * R, d);
    a5 = rescale_and_accumulate<D>(a5, smem, r0 + 5 * R, d);
    a6 = rescale_and_accumulate<D>(a6, smem, r0 + 6 * R, d);
    a7 = rescale_and_accumulate<D>(a7, smem, r0 + 7 * R, d);
  }
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0, d, a0);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + R, d, a1);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 2 * R, d, a2);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 3 * R, d, a3);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 4 * R, d, a4);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 5 * R, d, a5);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 6 * R, d, a6);
  store_row<T, D>(o, smem, q_base, q_seq_stride, q0, q_len, r0 + 7 * R, d, a7);
}

}  // namespace

template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kAttnThreads) void attention(const T* q, const T* k, const T* v, T* o, uint32_t q_heads,
                                                uint32_t kv_heads, uint32_t q_len, uint32_t kv_len,
                                                uint32_t q_head_stride, uint32_t q_seq_stride,
                                                uint32_t kv_head_stride, uint32_t kv_seq_stride,
                                                uint32_t kv_batch_stride, float scale, bool causal) {
  attention_block<T, D>(q, k, v, o, q_heads, kv_heads, q_len, kv_len, q_head_stride, q_seq_stride,
                        kv_head_stride, kv_seq_stride, kv_batch_stride, scale, causal);
}

template void attention<float, 64>(const float*, const float*, const float*, float*, uint32_t, uint32_t, uint32_t,
                                   uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);
template void attention<float, 128>(const float*, const float*, const float*, float*, uint32_t, uint32_t, uint32_t,
                                    uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);
template void attention<qv::bf16, 64>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t,
                                      uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float,
                                      bool);
template void attention<qv::bf16, 128>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t,
                                       uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                                       float, bool);
template void attention<qv::half, 64>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t,
                                      uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float,
                                      bool);
template void attention<qv::half, 128>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t,
                                       uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                                       float, bool);
