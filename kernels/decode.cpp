// The small ops of a decode step: argmax and top-k over rows (greedy sampling on the device, so
// the logits are never downloaded; the candidates of top-k sampling), element-wise add and mul (residual adds, scaling), and kv_append (new
// keys / values into a KV cache at a position held in device memory, so a recorded step replays
// with the position advancing on the device).
#include "argmax.h"
#include "common.h"

using qvops::from_f32;
using qvops::kElemThreads;
using qvops::kRowThreads;
using qvops::to_f32;

namespace {

// ---- add / mul ---------------------------------------------------------------------------------
// out = a + b or a * b in float, rounded once to T, 16-byte chunks as in kernels/elementwise.cpp.
// out may be a or b: each element is read and then written by the same thread, and by no other.
template <bool MUL>
QV_DEVICE qv::float4 combine(qv::float4 a, qv::float4 b) {
  if constexpr (MUL) return a * b;
  else return a + b;
}
template <bool MUL, typename T>
QV_DEVICE void binary_elementwise(const T* a, const T* b, T* out, uint32_t n) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  uint32_t chunks = n / C;
  for (uint32_t i = qvops::grid_first(); i < chunks; i += qvops::grid_stride()) {
    qv::float4 a_lo, b_lo, a_hi = qv::float4(0.0f), b_hi = qv::float4(0.0f);   // hi: 16-bit T only
    qvops::load16(a + C * i, a_lo, a_hi);
    qvops::load16(b + C * i, b_lo, b_hi);
    qvops::store16(out + C * i, combine<MUL>(a_lo, b_lo), combine<MUL>(a_hi, b_hi));
  }
  for (uint32_t i = C * chunks + qvops::grid_first(); i < n; i += qvops::grid_stride()) {
    float x = to_f32(a[i]), y = to_f32(b[i]);
    out[i] = from_f32<T>(MUL ? x * y : x + y);
  }
}

// ---- kv_append ---------------------------------------------------------------------------------
// src: [batch][tokens][heads][head_dim]; token t of sequence b goes to cache position
// position[b] + t, in the cache's layout: BHSD [batch][heads][capacity][head_dim] or BSHD
// [batch][capacity][heads][head_dim]. A position the host cannot see is checked here: a
// negative position[b] writes nothing of sequence b, and rows at position[b] + t >= capacity are
// not written (the kernel cannot report an error, and writing outside the cache is not an
// option). W elements move per item: a 16-byte
// chunk when head_dim % W == 0 (rows then start on 16-byte boundaries in both buffers), else one.
template <uint32_t W, typename T>
QV_DEVICE void kv_append_items(const T* src, const int32_t* position, T* cache, uint32_t batch, uint32_t tokens,
                               uint32_t heads, uint32_t head_dim, uint32_t capacity, bool bshd) {
  uint32_t items = batch * tokens * heads * head_dim / W;
  for (uint32_t i = qvops::grid_first(); i < items; i += qvops::grid_stride()) {
    uint32_t e = i * W;
    uint32_t row = e / head_dim;   // (b * tokens + t) * heads + h
    uint32_t d = e - row * head_dim;
    uint32_t bt = row / heads;
    uint32_t h = row - bt * heads;
    uint32_t b = bt / tokens;
    uint32_t t = bt - b * tokens;
    int32_t start = position[b];
    // start + t < capacity, written so that nothing overflows for any int32 start.
    if (start < 0 || static_cast<uint32_t>(start) >= capacity || t >= capacity - static_cast<uint32_t>(start))
      continue;
    uint32_t p = static_cast<uint32_t>(start) + t;
    uint32_t dst = bshd ? ((b * capacity + p) * heads + h) * head_dim + d : ((b * heads + h) * capacity + p) * head_dim + d;
    if constexpr (W == 1) cache[dst] = src[e];
    else qv::store(cache + dst, qv::load<W>(src + e));
  }
}

}  // namespace

// out[r] = the index of the largest element of row r (rows x cols), the lowest of equal maxima;
// NaN ranks above every number (see order_key). One block per row.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void argmax(const T* x, int32_t* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t best_key = 0, best_index = 0xFFFFFFFFu;
  qvops::argmax_span(x, row * cols, cols, 0, best_key, best_index);   // column indices
  qvops::block_argmax(best_key, best_index);
  if (qv::thread_id_x() == 0) out[row] = static_cast<int32_t>(best_index);
}

// The k largest elements of each row in argmax's order (order_key: NaN above +inf, -0 equal to
// +0), largest first, equal elements by increasing column: k rounds, round r taking the best
// element ranked after round r - 1's pick (a smaller key, or the same key at a larger column)
// with argmax's two block reductions. k passes over the row: meant for sampling's few candidates
// (k of 40 over a vocabulary of 128k reads the row 40 times, from L2 after the first).
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void topk(const T* x, T* values, int32_t* indices, uint32_t rows, uint32_t cols,
                                          uint32_t k) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t start = row * cols;
  uint32_t picked_key = 0, picked_index = 0;
  for (uint32_t r = 0; r < k; ++r) {
    uint32_t best_key = 0, best_index = 0xFFFFFFFFu;
    for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
      uint32_t key = qvops::order_key(to_f32(x[start + c]));
      bool after = r == 0 || key < picked_key || (key == picked_key && c > picked_index);
      if (after && key > best_key) {
        best_key = key;
        best_index = c;
      }
    }
    qvops::block_argmax(best_key, best_index);
    picked_key = best_key;
    picked_index = best_index;
    if (qv::thread_id_x() == 0) {
      indices[row * k + r] = static_cast<int32_t>(picked_index);
      values[row * k + r] = x[start + picked_index];
    }
  }
}

// out = a + b
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void add(const T* a, const T* b, T* out, uint32_t n) {
  binary_elementwise<false>(a, b, out, n);
}

// out = a * b
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void mul(const T* a, const T* b, T* out, uint32_t n) {
  binary_elementwise<true>(a, b, out, n);
}

// cache[position[b] + t] = src[b][t] for every head (see kv_append_items).
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void kv_append(const T* src, const int32_t* position, T* cache, uint32_t batch,
                                                uint32_t tokens, uint32_t heads, uint32_t head_dim, uint32_t capacity,
                                                bool bshd) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  if (head_dim % C == 0) kv_append_items<C>(src, position, cache, batch, tokens, heads, head_dim, capacity, bshd);
  else kv_append_items<1>(src, position, cache, batch, tokens, heads, head_dim, capacity, bshd);
}

template void argmax<float>(const float*, int32_t*, uint32_t, uint32_t);
template void topk<float>(const float*, float*, int32_t*, uint32_t, uint32_t, uint32_t);
template void add<float>(const float*, const float*, float*, uint32_t);
template void mul<float>(const float*, const float*, float*, uint32_t);
template void kv_append<float>(const float*, const int32_t*, float*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                               bool);
template void argmax<qv::bf16>(const qv::bf16*, int32_t*, uint32_t, uint32_t);
template void topk<qv::bf16>(const qv::bf16*, qv::bf16*, int32_t*, uint32_t, uint32_t, uint32_t);
template void add<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t);
template void mul<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t);
template void kv_append<qv::bf16>(const qv::bf16*, const int32_t*, qv::bf16*, uint32_t, uint32_t, uint32_t, uint32_t,
                                  uint32_t, bool);
template void argmax<qv::half>(const qv::half*, int32_t*, uint32_t, uint32_t);
template void topk<qv::half>(const qv::half*, qv::half*, int32_t*, uint32_t, uint32_t, uint32_t);
template void add<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t);
template void mul<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t);
template void kv_append<qv::half>(const qv::half*, const int32_t*, qv::half*, uint32_t, uint32_t, uint32_t, uint32_t,
                                  uint32_t, bool);
