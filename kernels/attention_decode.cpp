// Attention of one new query per sequence over a KV cache (decoding), split over the keys
// ("flash decoding"): the key range is cut into chunks of kDecodeKeys, one block per chunk and
// per HP query heads that share a KV head, so even a short batch of one sequence fills the GPU;
// a second kernel combines the chunks' partial results with their softmax statistics.
//
//   o[b, h, :] = sum_{j <= p} softmax_j(scale * q[b, h, :] . k[b, g, j, :]) v[b, g, j, :]
//   p = position[b] (read on the device: a recorded decode step replays unchanged as the
//   position advances), g = h / (q_heads / kv_heads).
//
// The cache is the op library's KV cache (ops::KvCacheShape: BHSD or BSHD, kv_capacity
// positions, strides from the host); q and o are [batch][q_heads][head_dim]. Positions at or
// past kv_capacity read the whole cache; a negative position attends to nothing and writes 0.
//
// Control flow around barriers and subgroup sums never depends on the position (a value from
// memory, not uniform to WGSL's analysis): chunks past the last key run their loops with every
// load masked off, and write an empty partial (m = lowest, l = 0).
#include "common.h"

using qvops::F8;
using qvops::from_f32;
using qvops::kLowest;
using qvops::to_f32;

constexpr uint32_t kDecodeThreads = 256;
constexpr uint32_t kDecodeKeys = 64;     // keys per chunk (block); runtime/ops/ops.cpp sizes the splits
constexpr uint32_t kDecodeHeads = 4;     // query heads per block at most (HP; the host picks a divisor of the group)
constexpr uint32_t kCombineThreads = 128;

namespace {

// Keys 0 .. kv_len - 1 of sequence b are visible.
QV_DEVICE uint32_t visible_keys(const int32_t* position, uint32_t b, uint32_t capacity) {
  int32_t p = position[b];
  if (p < 0) return 0;
  return static_cast<uint32_t>(p) >= capacity ? capacity : static_cast<uint32_t>(p) + 1;
}

// acc + the products of four float4 of q (workgroup memory) at e, e + kKeyStride, e + 2 kKeyStride,
// e + 3 kKeyStride with k0 .. k3: the elements a key's thread holds (see attention_decode_split).
constexpr uint32_t kKeyStride = 4 * (kDecodeThreads / kDecodeKeys);
template <uint32_t N>
QV_DEVICE float share_dot(const qv::shared<float, N>& q, uint32_t e, qv::float4 k0, qv::float4 k1, qv::float4 k2,
                          qv::float4 k3, float acc) {
  qv::float4 p = qv::load<4>(&q[e]) * k0 + qv::load<4>(&q[e + kKeyStride]) * k1;
  p = qvops::fma4(qv::load<4>(&q[e + 2 * kKeyStride]), k2, p);
  p = qvops::fma4(qv::load<4>(&q[e + 3 * kKeyStride]), k3, p);
  return acc + qvops::sum4(p);
}

// Row `key` of the chunk (counted from its first key, j0) where the cache has it, else the chunk's
// first row: every load stays inside the cache. The bound is the capacity (a kernel argument), not
// the visible keys, so that no load waits for the position's; what a row past the visible keys
// holds is never used (scores masked, values selected away).
QV_DEVICE uint32_t cached_key(uint32_t key, uint32_t j0, uint32_t capacity) { return j0 + key < capacity ? key : 0; }

// Element `col` of the chunk's key row `key` as a float, 0 where the key is not visible (a select:
// the cache past the visible keys may hold anything, NaN included).
template <typename T>
QV_DEVICE float masked_v(const T* v, uint32_t col, uint32_t stride, uint32_t key, uint32_t n_valid, uint32_t j0,
                         uint32_t capacity) {
  float x = to_f32(v[col + cached_key(key, j0, capacity) * stride]);
  return key < n_valid ? x : 0.0f;
}
// Column `col` of the chunk's key rows first .. first + 7.
template <typename T>
QV_DEVICE F8 load_v8(const T* v, uint32_t col, uint32_t stride, uint32_t first, uint32_t n_valid, uint32_t j0,
                     uint32_t capacity) {
  return F8(masked_v(v, col, stride, first, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 1, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 2, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 3, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 4, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 5, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 6, n_valid, j0, capacity),
            masked_v(v, col, stride, first + 7, n_valid, j0, capacity));
}

// acc + p[at] v[0] + .. + p[at + 7] v[7] (p: weights in workgroup memory, two float4 reads).
template <uint32_t N>
QV_DEVICE float weigh8(const qv::shared<float, N>& p, uint32_t at, F8 v, float acc) {
  qv::float4 lo = qv::load<4>(&p[at]), hi = qv::load<4>(&p[at + 4]);
  qv::float4 s = lo * qv::float4(v[0], v[1], v[2], v[3]);
  s = qvops::fma4(hi, qv::float4(v[4], v[5], v[6], v[7]), s);
  return acc + qvops::sum4(s);
}

// a0 .. a3 + the products of 16 elements of a key's share (k0 .. k3, elements e, e + kKeyStride, ..)
// with the same elements of the four queries (workgroup memory qs, the first's from element e).
template <uint32_t N>
QV_DEVICE void score_group(const qv::shared<float, N>& qs, uint32_t e, qv::float4 k0, qv::float4 k1, qv::float4 k2,
                           qv::float4 k3, float& a0, float& a1, float& a2, float& a3) {
  constexpr uint32_t D = N / kDecodeHeads;
  a0 = share_dot(qs, e, k0, k1, k2, k3, a0);
  a1 = share_dot(qs, D + e, k0, k1, k2, k3, a1);
  a2 = share_dot(qs, 2 * D + e, k0, k1, k2, k3, a2);
  a3 = share_dot(qs, 3 * D + e, k0, k1, k2, k3, a3);
}

}  // namespace

// Block (chunk, head pass, b): scores of HP heads against the chunk's keys, their softmax within
// the chunk, and the unnormalised P V. Partial results in `work`: at slot = (b * q_heads + h) *
// splits + chunk, work[slot * D + d] (the output) and work[ml_base + 2 slot + {0, 1}] (the
// chunk's maximum score and its sum of exp(s - maximum)).
//
// Every load of the chunk's keys and values is issued at entry, before the first barrier, at
// addresses that do not depend on the position: a block's serial chain is then one trip to
// memory, where loading V after the softmax and K after the queries took three, and a step's
// decode attention is a few short waves of such blocks. The queries and the weights P are read
// from workgroup memory as float4 (a thread's keys of V are contiguous for that), a quarter of
// the reads.
template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kDecodeThreads) void attention_decode_split(
    const T* q, const T* k, const T* v, const int32_t* position, float* work, uint32_t ml_base, uint32_t q_heads,
    uint32_t group, uint32_t heads_per_block, uint32_t capacity, uint32_t kv_head_stride, uint32_t kv_seq_stride,
    uint32_t kv_batch_stride, uint32_t splits, float scale) {
  qv::shared<float, kDecodeHeads * D> qs;               // the HP queries, scaled; rows past HP are 0
  qv::shared<float, kDecodeHeads * kDecodeKeys> ps;     // scores, then exp(s - m)
  qv::shared<float, 2 * kDecodeHeads> stats;            // m, l per head
  qv::shared<float, kDecodeHeads * kDecodeThreads> partial;   // the scores' and P V's partial sums
  uint32_t t = qv::thread_id_x();
  uint32_t chunk = qv::block_id_x(), b = qv::block_id_z();
  uint32_t h0 = qv::block_id_y() * heads_per_block;
  uint32_t kv_base = b * kv_batch_stride + (h0 / group) * kv_head_stride;
  uint32_t kv_len = visible_keys(position, b, capacity);
  uint32_t j0 = chunk * kDecodeKeys;
  uint32_t n_valid = j0 < kv_len ? (kv_len - j0 < kDecodeKeys ? kv_len - j0 : kDecodeKeys) : 0;
  uint32_t chunk_base = kv_base + j0 * kv_seq_stride;

  // K: kKeyThreads threads per key, thread `part` holding the float4 at elements 4 part + i kKeyStride
  // of the key's row (4 or 8 of them, i = 0 ..): the kKeyThreads threads of a key read 64
  // contiguous bytes a load, so a subgroup's load is whole sectors of eight rows, where a
  // contiguous slice a thread made each load touch 32 lines, half of each sector used (the
  // L1 pipeline, not the memory, bounded the kernel). V: thread t owns column d of the chunk's
  // keys set KV .. set KV + KV - 1, KV = kDecodeKeys / R (16 or 32 floats), for the HP heads at
  // once (each V element loaded once a block; a subgroup's loads of one key are a contiguous row).
  constexpr uint32_t kKeyThreads = kDecodeThreads / kDecodeKeys;
  constexpr uint32_t kLoads = D / (4 * kKeyThreads);
  constexpr uint32_t R = kDecodeThreads / D;
  constexpr uint32_t KV = kDecodeKeys / R;
  static_assert(kKeyStride == 4 * kKeyThreads, "a key's threads cover kKeyStride elements a load");
  static_assert(kLoads == 4 || kLoads == 8, "a key's share is one or two groups of four 4-element loads");
  static_assert(KV == 16 || KV == 32, "a thread's V column is two or four groups of 8");
  uint32_t key = t / kKeyThreads, part = t - key * kKeyThreads;
  uint32_t krow = chunk_base + cached_key(key, j0, capacity) * kv_seq_stride + 4 * part;
  qv::float4 k0 = qvops::load4(k + krow), k1 = qvops::load4(k + krow + kKeyStride);
  qv::float4 k2 = qvops::load4(k + krow + 2 * kKeyStride), k3 = qvops::load4(k + krow + 3 * kKeyStride);
  qv::float4 k4(0.0f), k5(0.0f), k6(0.0f), k7(0.0f);
  if constexpr (kLoads == 8) {
    k4 = qvops::load4(k + krow + 4 * kKeyStride), k5 = qvops::load4(k + krow + 5 * kKeyStride);
    k6 = qvops::load4(k + krow + 6 * kKeyStride), k7 = qvops::load4(k + krow + 7 * kKeyStride);
  }
  uint32_t d = t % D, set = t / D, col = chunk_base + d, first = set * KV;
  F8 va = load_v8(v, col, kv_seq_stride, first, n_valid, j0, capacity);
  F8 vb = load_v8(v, col, kv_seq_stride, first + 8, n_valid, j0, capacity);
  F8 vc(0.0f), vd(0.0f);
  if constexpr (KV == 32) {
    vc = load_v8(v, col, kv_seq_stride, first + 16, n_valid, j0, capacity);
    vd = load_v8(v, col, kv_seq_stride, first + 24, n_valid, j0, capacity);
  }

  for (uint32_t e = t; e < kDecodeHeads * D; e += kDecodeThreads) {
    uint32_t hh = e / D;
    qs[e] = hh < heads_per_block ? to_f32(q[(b * q_heads + h0 + hh) * D + e % D]) * scale : 0.0f;
  }
  qv::barrier();

  // Scores: the share's partial dot products with the four queries, summed through workgroup
  // memory.
  {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    score_group(qs, 4 * part, k0, k1, k2, k3, a0, a1, a2, a3);
    if constexpr (kLoads == 8) score_group(qs, 4 * part + 4 * kKeyStride, k4, k5, k6, k7, a0, a1, a2, a3);
    partial[t] = a0;
    partial[kDecodeThreads + t] = a1;
    partial[2 * kDecodeThreads + t] = a2;
    partial[3 * kDecodeThreads + t] = a3;
  }
  qv::barrier();
  for (uint32_t e = t; e < kDecodeHeads * kDecodeKeys; e += kDecodeThreads) {
    uint32_t hh = e / kDecodeKeys, j = e - hh * kDecodeKeys;
    float sum = 0.0f;
    for (uint32_t p = 0; p < kKeyThreads; p += 4)
      sum += qvops::sum4(qv::load<4>(&partial[hh * kDecodeThreads + j * kKeyThreads + p]));
    ps[e] = j < n_valid ? sum : kLowest;
  }
  qv::barrier();

  // The chunk's softmax statistics, a subgroup per head, its lanes over the keys, where a thread
  // per head would take 2 x 64 serial steps (an exp in each) while the block waits. The loop
  // bounds are uniform (subgroups that own no head run it masked), so the subgroup operations
  // sit in uniform control flow.
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t subgroups = kDecodeThreads / sg, group_id = t / sg;
  for (uint32_t first = 0; first < kDecodeHeads; first += subgroups) {
    uint32_t hh = first + group_id;
    bool mine = hh < kDecodeHeads;
    uint32_t row = mine ? hh * kDecodeKeys : 0;
    float m = kLowest;
    for (uint32_t j = lane; j < kDecodeKeys; j += sg) m = mine ? qv::max(m, ps[row + j]) : m;
    m = qv::subgroup_max(m);
    float l = 0.0f;
    for (uint32_t j = lane; j < kDecodeKeys; j += sg) {
      if (mine) {
        float s = ps[row + j];
        float e = s == kLowest ? 0.0f : qvops::exp_by_exp2(s - m);
        ps[row + j] = e;
        l += e;
      }
    }
    l = qv::subgroup_sum(l);
    if (mine && lane == 0) {
      stats[2 * hh] = m;
      stats[2 * hh + 1] = l;
    }
  }
  qv::barrier();

  // P V from the values in registers; the R key sets' sums added through workgroup memory.
  for (uint32_t hh = 0; hh < kDecodeHeads; ++hh) {
    uint32_t at = hh * kDecodeKeys + first;
    float acc = weigh8(ps, at + 8, vb, weigh8(ps, at, va, 0.0f));
    if constexpr (KV == 32) acc = weigh8(ps, at + 24, vd, weigh8(ps, at + 16, vc, acc));
    partial[(hh * R + set) * D + d] = acc;
  }
  qv::barrier();
  for (uint32_t e = t; e < heads_per_block * D; e += kDecodeThreads) {
    uint32_t hh = e / D, dd = e - hh * D;
    float acc = 0.0f;
    for (uint32_t s = 0; s < R; ++s) acc += partial[(hh * R + s) * D + dd];
    uint32_t slot = (b * q_heads + h0 + hh) * splits + chunk;
    work[slot * D + dd] = acc;
    if (dd == 0) {
      work[ml_base + 2 * slot] = stats[2 * hh];
      work[ml_base + 2 * slot + 1] = stats[2 * hh + 1];
    }
  }
}

// o[b, h, d] from the chunks that hold visible keys (0 for d >= D, and where none is visible).
// Called by every thread of the block (block-wide reductions): the chunks' statistics are read
// by the block's threads together and their outputs eight chunks a step, so the loads of a step
// are in flight together rather than one chunk's round trip after another's.
template <uint32_t D>
QV_DEVICE float combined_output(const float* work, uint32_t ml_base, const int32_t* position, uint32_t q_heads,
                                uint32_t capacity, uint32_t splits, uint32_t h, uint32_t b, uint32_t d) {
  const float* ml = work + ml_base;
  uint32_t kv_len = visible_keys(position, b, capacity);
  uint32_t used = (kv_len + kDecodeKeys - 1) / kDecodeKeys;
  if (used > splits) used = splits;
  uint32_t row = (b * q_heads + h) * splits;
  float m = kLowest;
  for (uint32_t c = d; c < used; c += kCombineThreads) m = qv::max(m, ml[2 * (row + c)]);
  m = qv::block_max(m);
  float part = 0.0f;
  for (uint32_t c = d; c < used; c += kCombineThreads)
    part = qv::fma(qvops::exp_by_exp2(ml[2 * (row + c)] - m), ml[2 * (row + c) + 1], part);
  float total = qv::block_sum(part);
  uint32_t col = d < D ? d : 0;
  const float* out = work + row * D + col;
  float acc = 0.0f;
  uint32_t c = 0;
  for (; c + 8 <= used; c += 8) {
    float m0 = ml[2 * (row + c)], m1 = ml[2 * (row + c + 1)], m2 = ml[2 * (row + c + 2)], m3 = ml[2 * (row + c + 3)];
    float m4 = ml[2 * (row + c + 4)], m5 = ml[2 * (row + c + 5)], m6 = ml[2 * (row + c + 6)];
    float m7 = ml[2 * (row + c + 7)];
    float x0 = out[c * D], x1 = out[(c + 1) * D], x2 = out[(c + 2) * D], x3 = out[(c + 3) * D];
    float x4 = out[(c + 4) * D], x5 = out[(c + 5) * D], x6 = out[(c + 6) * D], x7 = out[(c + 7) * D];
    acc = qv::fma(qvops::exp_by_exp2(m0 - m), x0, acc);
    acc = qv::fma(qvops::exp_by_exp2(m1 - m), x1, acc);
    acc = qv::fma(qvops::exp_by_exp2(m2 - m), x2, acc);
    acc = qv::fma(qvops::exp_by_exp2(m3 - m), x3, acc);
    acc = qv::fma(qvops::exp_by_exp2(m4 - m), x4, acc);
    acc = qv::fma(qvops::exp_by_exp2(m5 - m), x5, acc);
    acc = qv::fma(qvops::exp_by_exp2(m6 - m), x6, acc);
    acc = qv::fma(qvops::exp_by_exp2(m7 - m), x7, acc);
  }
  for (; c < used; ++c) acc = qv::fma(qvops::exp_by_exp2(ml[2 * (row + c)] - m), out[c * D], acc);
  return used == 0 || d >= D ? 0.0f : acc / total;
}

// Block (h, b): o[b, h, :] from the chunks that hold visible keys.
template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kCombineThreads) void attention_decode_combine(const float* work, uint32_t ml_base,
                                                                  const int32_t* position, T* o, uint32_t q_heads,
                                                                  uint32_t capacity, uint32_t splits) {
  uint32_t h = qv::block_id_x(), b = qv::block_id_z(), d = qv::thread_id_x();
  float v = combined_output<D>(work, ml_base, position, q_heads, capacity, splits, h, b, d);
  if (d < D) o[(b * q_heads + h) * D + d] = from_f32<T>(v);
}

// attention_decode_combine<float, D> that also writes o as int8 activations
// (ops::quantize_activations_q8's rounding; row b of the q_heads D outputs at words
// b (E / 4 + E / 32) .., E = q_heads D, its scales the E / 32 floats after its quants, in the same
// buffer): the input of the output projection's int8-activation product without a quantize
// launch of its own. A head's D values go through workgroup memory to D / 4 threads of four.
template <uint32_t D>
QV_KERNEL QV_BLOCK(kCombineThreads) void attention_decode_combine_q8(const float* work, uint32_t ml_base,
                                                                     const int32_t* position, float* o, uint32_t* oq,
                                                                     float* od, uint32_t q_heads, uint32_t capacity,
                                                                     uint32_t splits) {
  qv::shared<float, D> values;
  qv::shared<float, D / 4> part;
  uint32_t h = qv::block_id_x(), b = qv::block_id_z(), t = qv::thread_id_x();
  float v = combined_output<D>(work, ml_base, position, q_heads, capacity, splits, h, b, t);
  if (t < D) {
    o[(b * q_heads + h) * D + t] = v;
    values[t] = v;
  }
  qv::barrier();
  const bool quad = t < D / 4;   // part holds D / 4 maxima
  qv::float4 w(0.0f);
  if (quad) w = qv::float4(values[4 * t], values[4 * t + 1], values[4 * t + 2], values[4 * t + 3]);
  uint32_t e = q_heads * D, row = b * (e / 4 + e / 32);
  float scale = qvops::q8_quantize(part, t, w, quad, oq, row + h * (D / 4) + t);
  if (quad && t % 8 == 0) od[row + e / 4 + h * (D / 32) + t / 8] = scale;   // od is oq's buffer
}

#define QV_DECODE_ATTENTION(T, D)                                                                                  \
  template void attention_decode_split<T, D>(const T*, const T*, const T*, const int32_t*, float*, uint32_t,       \
                                             uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, \
                                             uint32_t, float);                                                     \
  template void attention_decode_combine<T, D>(const float*, uint32_t, const int32_t*, T*, uint32_t, uint32_t,     \
                                               uint32_t);
QV_DECODE_ATTENTION(float, 64)
QV_DECODE_ATTENTION(float, 128)
QV_DECODE_ATTENTION(qv::bf16, 64)
QV_DECODE_ATTENTION(qv::bf16, 128)
QV_DECODE_ATTENTION(qv::half, 64)
QV_DECODE_ATTENTION(qv::half, 128)
template void attention_decode_combine_q8<64>(const float*, uint32_t, const int32_t*, float*, uint32_t*, float*,
                                              uint32_t, uint32_t, uint32_t);
template void attention_decode_combine_q8<128>(const float*, uint32_t, const int32_t*, float*, uint32_t*, float*,
                                               uint32_t, uint32_t, uint32_t);
