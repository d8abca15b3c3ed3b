// quiver-llm's own kernels (compiled by quiverc with the runner, reached through the generated
// llm_kernels.h): what a decode step does besides the op library's ops.
#include <quiver/kernel.h>

#include "argmax.h"   // the op library's argmax helpers (kernels/argmax.h): order_key, block_argmax
#include "common.h"   // the op library's device helpers (kernels/common.h): sin_cos, grid loops
#include "matvec_k_a8.h"       // the op library's int8-activation product walks: q4_k
#include "matvec_repacked.h"   // and repacked q4_0 / q8_0

// The end of a step, greedy: the chosen token (which the next step embeds) is kept as
// generated[p] and the position p advances, all on the device, so a recorded step replays with no
// host work in between. Two launches: ops::argmax gives a row one block, which reads a Llama-3
// row (128256 floats, 0.5 MB) at one multiprocessor's speed (39 us on an H200, a fiftieth of a
// Q4_0 decode step). argmax_slices gives each block `slice_size` logits and writes
// its best (order key, index) pair; argmax_advance reduces the pairs with the same ranking
// (largest key, then lowest index: ops::argmax's result exactly) and advances.
QV_KERNEL QV_BLOCK(qvops::kRowThreads) void argmax_slices(const float* logits, uint32_t* pairs, uint32_t cols,
                                                           uint32_t slice_size) {
  uint32_t slice = qvops::block_row(), first = slice * slice_size;
  if (first >= cols) return;   // uniform per block
  uint32_t best_key = 0, best_index = 0xFFFFFFFFu;
  qvops::argmax_span(logits, first, qv::min(slice_size, cols - first), first, best_key, best_index);
  qvops::block_argmax(best_key, best_index);
  if (qv::thread_id_x() == 0) {
    pairs[2 * slice] = best_key;
    pairs[2 * slice + 1] = best_index;
  }
}

QV_KERNEL QV_BLOCK(qvops::kRowThreads) void argmax_advance(const uint32_t* pairs, uint32_t slices, int32_t* token,
                                                            int32_t* position, int32_t* generated, uint32_t capacity) {
  // A thread visits its slices in increasing order and keeps a strictly greater key: of equal
  // keys, the lowest slice's (lowest) index.
  uint32_t best_key = 0, best_index = 0xFFFFFFFFu;
  for (uint32_t s = qv::thread_id_x(); s < slices; s += qvops::kRowThreads) {
    if (pairs[2 * s] > best_key) {
      best_key = pairs[2 * s];
      best_index = pairs[2 * s + 1];
    }
  }
  qvops::block_argmax(best_key, best_index);
  if (qv::thread_id_x() != 0) return;
  token[0] = static_cast<int32_t>(best_index);
  int32_t p = position[0];
  if (p >= 0 && static_cast<uint32_t>(p) < capacity) generated[p] = static_cast<int32_t>(best_index);
  position[0] = p + 1;
}

namespace {

// Pairs i0 .. i0 + W - 1 (elements 2 i0 .. 2 i0 + 2W - 1) of one head row: rotated by the angles
// position * inv_freq[i] where `rotate` (llama.cpp's "normal" rope: adjacent pairs, the op
// library's rope with RopeStyle::GptJ, same angle, same sin_cos, same products), else copied.
template <uint32_t W>
QV_DEVICE void rope_or_copy(const float* src, float* dst, uint32_t i0, bool rotate, float position,
                            const float* inv_freq) {
  for (uint32_t j = 0; j < W; ++j) {
    float a = src[2 * (i0 + j)], b = src[2 * (i0 + j) + 1];
    if (rotate) {
      float s = 0.0f, c = 0.0f, ra = 0.0f, rb = 0.0f;
      qvops::sin_cos(position * inv_freq[i0 + j], s, c);
      qvops::rotate_pair(a, b, s, c, ra, rb);
      dst[2 * (i0 + j)] = ra;
      dst[2 * (i0 + j) + 1] = rb;
    } else {
      dst[2 * (i0 + j)] = a;
      dst[2 * (i0 + j) + 1] = b;
    }
  }
}

template <uint32_t W>
QV_DEVICE void qkv_rope_append_items(const float* q, const float* k, const float* v, uint32_t k_at, uint32_t v_at,
                                     const int32_t* position, const float* inv_freq, float* q_out, float* k_cache,
                                     float* v_cache, uint32_t heads, uint32_t kv_heads, uint32_t head_dim,
                                     uint32_t rot_half, uint32_t capacity) {
  int32_t pos = position[0];
  bool in_cache = pos >= 0 && static_cast<uint32_t>(pos) < capacity;
  float angle_pos = static_cast<float>(pos);
  uint32_t groups = head_dim / (2 * W);   // pair groups per head row
  uint32_t items = (heads + 2 * kv_heads) * groups;
  for (uint32_t g = qvops::grid_first(); g < items; g += qvops::grid_stride()) {
    uint32_t row = g / groups;   // Q's heads, then K's, then V's
    uint32_t i0 = W * (g - row * groups);
    if (row < heads) {
      rope_or_copy<W>(q + row * head_dim, q_out + row * head_dim, i0, i0 < rot_half, angle_pos, inv_freq);
    } else if (in_cache && row < heads + kv_heads) {
      uint32_t h = row - heads, at = (static_cast<uint32_t>(pos) * kv_heads + h) * head_dim;
      rope_or_copy<W>(k + (k_at + h * head_dim), k_cache + at, i0, i0 < rot_half, angle_pos, inv_freq);
    } else if (in_cache) {
      uint32_t h = row - heads - kv_heads, at = (static_cast<uint32_t>(pos) * kv_heads + h) * head_dim;
      rope_or_copy<W>(v + (v_at + h * head_dim), v_cache + at, i0, false, angle_pos, inv_freq);
    }
  }
}

// qkv_rope_append's work for the rows of the stacked Q, K, V product that this block computed
// (kQuantRows from block_row() kQuantRows, in y): Q's pairs rotated into q_out, K's rotated and
// V's copied into the caches at position[0] (none where it is outside [0, capacity)). The rows
// of y, written by the block's subgroups' first lanes, are visible to its threads after the
// barrier; a thread per row pair (head_dim is even, so a pair never straddles heads) finishes
// them with qkv_rope_append's angles and products, so the results are the same bits.
QV_DEVICE void rope_append_block_rows(const float* y, const int32_t* position, const float* inv_freq, float* q_out,
                                      float* k_cache, float* v_cache, uint32_t heads, uint32_t kv_heads,
                                      uint32_t head_dim, uint32_t rot_half, uint32_t capacity) {
  qv::barrier();
  uint32_t rows = (heads + 2 * kv_heads) * head_dim;
  uint32_t t = qv::thread_id_x(), row0 = qvops::block_row() * qvops::kQuantRows + 2 * t;
  if (t >= qvops::kQuantRows / 2 || row0 >= rows) return;
  uint32_t head = row0 / head_dim, i = (row0 - head * head_dim) / 2;
  int32_t pos = position[0];
  bool in_cache = pos >= 0 && static_cast<uint32_t>(pos) < capacity;
  float angle_pos = static_cast<float>(pos);
  if (head < heads) {
    rope_or_copy<1>(y + head * head_dim, q_out + head * head_dim, i, i < rot_half, angle_pos, inv_freq);
  } else if (in_cache && head < heads + kv_heads) {
    uint32_t at = (static_cast<uint32_t>(pos) * kv_heads + head - heads) * head_dim;
    rope_or_copy<1>(y + head * head_dim, k_cache + at, i, i < rot_half, angle_pos, inv_freq);
  } else if (in_cache) {
    uint32_t at = (static_cast<uint32_t>(pos) * kv_heads + head - heads - kv_heads) * head_dim;
    rope_or_copy<1>(y + head * head_dim, v_cache + at, i, false, angle_pos, inv_freq);
  }
}

}  // namespace

// One decode step's Q, K, V products (head_dim floats a head: Q's heads at q, K's from element
// k_at of k, V's from v_at of v; the three may be one buffer, the stacked product's rows) to what
// the attention reads: Q rotated into q_out, K rotated into k_cache and V copied into v_cache at
// position[0] (caches [capacity][kv_heads][head_dim]). One launch for the two ropes and two
// kv_appends (and the stacked product's row gathers) of the op-by-op step: at one token each of
// those is a few hundred threads whose launch costs more than its work. A position outside
// [0, capacity) writes nothing to the caches, as kv_append. rot_half = rotary dimensions / 2
// (inv_freq's length); four pairs a thread where whole groups of four fit (head_dim % 8 == 0,
// rot_half % 4 == 0).
QV_KERNEL QV_BLOCK(256) void qkv_rope_append(const float* q, const float* k, const float* v, uint32_t k_at,
                                             uint32_t v_at, const int32_t* position, const float* inv_freq,
                                             float* q_out, float* k_cache, float* v_cache, uint32_t heads,
                                             uint32_t kv_heads, uint32_t head_dim, uint32_t rot_half,
                                             uint32_t capacity) {
  if (head_dim % 8 == 0 && rot_half % 4 == 0)
    qkv_rope_append_items<4>(q, k, v, k_at, v_at, position, inv_freq, q_out, k_cache, v_cache, heads, kv_heads,
                             head_dim, rot_half, capacity);
  else
    qkv_rope_append_items<1>(q, k, v, k_at, v_at, position, inv_freq, q_out, k_cache, v_cache, heads, kv_heads,
                             head_dim, rot_half, capacity);
}

// qkv_rope_append fused into the stacked product that precedes it (a launch fewer a layer): y =
// W x for the (heads + 2 kv_heads) head_dim rows of W on x's int8 activations (xq, xd as
// ops::quantize_activations_q8 writes them), by the op library's walks (kernels/matvec_repacked.h,
// matvec_k_a8.h; one block per kQuantRows rows), then Q, K, V from y as qkv_rope_append takes
// them (rope_append_block_rows). W: repacked q4_0 / q8_0 (words q, scales as ops::repack_q4_0 /
// repack_q8_0 lay them out; q4_0 loads two chunks a step on PTX, four through SPIR-V: `_k4_`, as
// the op library's own products), or q4_k as GGUF stores it.
#define QKV_A8_ROPE(name, targets, Q8, K)                                                                          \
  QV_KERNEL QV_BLOCK(qvops::kQuantThreads) targets void name(                                                      \
      const uint32_t* q, const qv::half* scales, const uint32_t* xq, const float* xd, float* y, uint32_t cols,     \
      const int32_t* position, const float* inv_freq, float* q_out, float* k_cache, float* v_cache, uint32_t heads, \
      uint32_t kv_heads, uint32_t head_dim, uint32_t rot_half, uint32_t capacity) {                                \
    qvops::matvec_repacked_a8<Q8, K, qvops::kQuantRows / 2>(q, scales, xq, xd, y, (heads + 2 * kv_heads) * head_dim, \
                                                            cols);                                                 \
    rope_append_block_rows(y, position, inv_freq, q_out, k_cache, v_cache, heads, kv_heads, head_dim, rot_half,      \
                           capacity);                                                                              \
  }
QKV_A8_ROPE(qkv_q4_0r_a8_rope_append, QV_TARGETS(ptx, hsaco, wgsl, cpu), false, 2)
QKV_A8_ROPE(qkv_q4_0r_a8_k4_rope_append, QV_TARGETS(spirv, msl), false, 4)
QKV_A8_ROPE(qkv_q8_0r_a8_rope_append, , true, 1)
#undef QKV_A8_ROPE
QV_KERNEL QV_BLOCK(qvops::kQuantThreads) void qkv_q4_k_a8_rope_append(
    const uint32_t* w, const uint32_t* xq, const float* xd, float* y, uint32_t cols, const int32_t* position,
    const float* inv_freq, float* q_out, float* k_cache, float* v_cache, uint32_t heads, uint32_t kv_heads,
    uint32_t head_dim, uint32_t rot_half, uint32_t capacity) {
  qvops::matvec_q4_k_rows<qvops::kQuantRows / 2>(w, xq, xd, y, (heads + 2 * kv_heads) * head_dim, cols);
  rope_append_block_rows(y, position, inv_freq, q_out, k_cache, v_cache, heads, kv_heads, head_dim, rot_half, capacity);
}

namespace {

QV_DEVICE float swiglu(float g, float u) { return g / (1.0f + qvops::exp_by_exp2(-g)) * u; }
QV_DEVICE qv::float4 swiglu4(qv::float4 g, qv::float4 u) {
  return qv::float4(swiglu(g[0], u[0]), swiglu(g[1], u[1]), swiglu(g[2], u[2]), swiglu(g[3], u[3]));
}

// out[r][i] = silu(g) * u for g = gate_up[r][i], u = gate_up[r][n + i]: the op library's
// silu_gate (silu(v) = v / (1 + exp(-v)), in float) over the two halves of a row of the stacked
// gate and up product. Four elements a thread where rows are whole groups of four.
template <typename T>
QV_DEVICE void swiglu_halves_items(const T* gate_up, T* out, uint32_t rows, uint32_t n) {
  if (n % 4 == 0) {
    uint32_t groups = n / 4, items = rows * groups;
    for (uint32_t g = qvops::grid_first(); g < items; g += qvops::grid_stride()) {
      uint32_t r = g / groups, i = 4 * (g - r * groups);
      qv::float4 x = qvops::load4(gate_up + 2 * r * n + i), u = qvops::load4(gate_up + 2 * r * n + n + i);
      qvops::store4(out + r * n + i, swiglu4(x, u));
    }
    return;
  }
  for (uint32_t e = qvops::grid_first(); e < rows * n; e += qvops::grid_stride()) {
    uint32_t r = e / n, i = e - r * n;
    float x = qvops::to_f32(gate_up[2 * r * n + i]), u = qvops::to_f32(gate_up[2 * r * n + n + i]);
    out[e] = qvops::from_f32<T>(swiglu(x, u));
  }
}

}  // namespace

// SwiGLU of the stacked gate and up product (rows x 2n: each row's n gate values, then its n up
// values) into out (rows x n): one product of both matrices where two ran, as Q, K, V share one.
QV_KERNEL QV_BLOCK(256) void swiglu_halves_f32(const float* gate_up, float* out, uint32_t rows, uint32_t n) {
  swiglu_halves_items(gate_up, out, rows, n);
}
QV_KERNEL QV_BLOCK(256) void swiglu_halves_bf16(const qv::bf16* gate_up, qv::bf16* out, uint32_t rows, uint32_t n) {
  swiglu_halves_items(gate_up, out, rows, n);
}
QV_KERNEL QV_BLOCK(256) void swiglu_halves_f16(const qv::half* gate_up, qv::half* out, uint32_t rows, uint32_t n) {
  swiglu_halves_items(gate_up, out, rows, n);
}

// swiglu_halves_f32 of one row (a decode step's) whose result only feeds int8-activation products:
// written straight as int8 activations (ops::quantize_activations_q8's rounding and planar
// layout: the n quants as n / 4 words, then the n / 32 float d as their bits, one buffer of
// words), where the float result and a quantize launch ran. A thread per 4 elements, a
// 32-element block's maximum through workgroup memory; n a multiple of 32 (runtime: llama.cpp).
QV_KERNEL QV_BLOCK(256) void swiglu_halves_q8(const float* gate_up, uint32_t* xq, uint32_t n) {
  qv::shared<float, 256> part;
  uint32_t t = qv::thread_id_x(), word = qv::block_id_x() * 256 + t;
  bool valid = word < n / 4;   // a block's 8 threads are all valid or none
  qv::float4 y(0.0f);
  if (valid) y = swiglu4(qvops::load4(gate_up + 4 * word), qvops::load4(gate_up + n + 4 * word));
  float d = qvops::q8_quantize(part, t, y, valid, xq, word);
  if (valid && t % 8 == 0) xq[n / 4 + word / 8] = qv::bit_cast<uint32_t>(d);
}
