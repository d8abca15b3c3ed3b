// Element-wise ops (silu_gate, gelu), rotary position embedding (rope) and the embedding gather.
// All use grid-stride loops: the host caps the grid (Vulkan guarantees 65535 blocks per
// dimension) and each thread handles every grid_stride()-th element; consecutive threads touch
// consecutive elements.
#include "common.h"

using qvops::from_f32;
using qvops::kElemThreads;
using qvops::to_f32;

// out = silu(x) * g = x / (1 + exp(-x)) * g
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void silu_gate(const T* x, const T* g, T* out, uint32_t n) {
  for (uint32_t i = qvops::grid_first(); i < n; i += qvops::grid_stride()) {
    float v = to_f32(x[i]);
    out[i] = from_f32<T>(v / (1.0f + qv::exp(-v)) * to_f32(g[i]));
  }
}

// gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void gelu_erf(const T* x, T* out, uint32_t n) {
  for (uint32_t i = qvops::grid_first(); i < n; i += qvops::grid_stride()) {
    float v = to_f32(x[i]);
    out[i] = from_f32<T>(0.5f * v * (1.0f + qv::erf(v * 0.707106781186547524f)));
  }
}

// The tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void gelu_tanh(const T* x, T* out, uint32_t n) {
  for (uint32_t i = qvops::grid_first(); i < n; i += qvops::grid_stride()) {
    float v = to_f32(x[i]);
    float inner = 0.797884560802865356f * (v + 0.044715f * v * v * v);
    out[i] = from_f32<T>(0.5f * v * (1.0f + qv::tanh(inner)));
  }
}

namespace {

// Rotary embedding of x laid out [tokens][heads][head_dim]: one thread per pair of elements.
// Pair i < rot_half of a row is rotated by the angle pos[token] * inv_freq[i] (computed in float,
// as the usual f32 implementations do; |angle| < 2^16 * pi / 2, see qvops::sin_cos); pairs past
// the rotary dimensions are copied.
// INTERLEAVED: GPT-J pairs (2i, 2i + 1); otherwise GPT-NeoX pairs (i, i + rot_half).
template <typename T, bool INTERLEAVED>
QV_DEVICE void rope_pairs(const T* x, const int32_t* pos, const float* inv_freq, T* out, uint32_t tokens,
                          uint32_t heads, uint32_t head_dim, uint32_t rot_half) {
  uint32_t half_dim = head_dim / 2;
  uint32_t pairs = tokens * heads * half_dim;
  for (uint32_t p = qvops::grid_first(); p < pairs; p += qvops::grid_stride()) {
    uint32_t row = p / half_dim;
    uint32_t i = p - row * half_dim;
    uint32_t base = row * head_dim;
    if (i < rot_half) {
      uint32_t a = INTERLEAVED ? 2 * i : i;
      uint32_t b = INTERLEAVED ? 2 * i + 1 : i + rot_half;
      float angle = static_cast<float>(pos[row / heads]) * inv_freq[i];
      float c = 0.0f, s = 0.0f;
      qvops::sin_cos(angle, s, c);
      float xa = to_f32(x[base + a]), xb = to_f32(x[base + b]);
      out[base + a] = from_f32<T>(xa * c - xb * s);
      out[base + b] = from_f32<T>(xb * c + xa * s);
    } else {
      out[base + 2 * i] = x[base + 2 * i];
      out[base + 2 * i + 1] = x[base + 2 * i + 1];
    }
  }
}

}  // namespace

template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void rope_neox(const T* x, const int32_t* pos, const float* inv_freq, T* out,
                                                uint32_t tokens, uint32_t heads, uint32_t head_dim,
                                                uint32_t rot_half) {
  rope_pairs<T, false>(x, pos, inv_freq, out, tokens, heads, head_dim, rot_half);
}

template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void rope_gptj(const T* x, const int32_t* pos, const float* inv_freq, T* out,
                                                uint32_t tokens, uint32_t heads, uint32_t head_dim,
                                                uint32_t rot_half) {
  rope_pairs<T, true>(x, pos, inv_freq, out, tokens, heads, head_dim, rot_half);
}

// out[t, d] = table[ids[t], d]; an id outside [0, vocab) gives a row of zeros (the kernel cannot
// report an error, and reading outside the table is not an option).
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void embedding(const T* table, const int32_t* ids, T* out, uint32_t tokens,
                                                uint32_t dim, uint32_t vocab) {
  uint32_t n = tokens * dim;
  for (uint32_t i = qvops::grid_first(); i < n; i += qvops::grid_stride()) {
    uint32_t t = i / dim;
    uint32_t d = i - t * dim;
    int32_t id = ids[t];
    if (id >= 0 && static_cast<uint32_t>(id) < vocab)
      out[i] = table[static_cast<uint32_t>(id) * dim + d];
    else
      out[i] = from_f32<T>(0.0f);
  }
}

template void silu_gate<float>(const float*, const float*, float*, uint32_t);
template void gelu_erf<float>(const float*, float*, uint32_t);
template void gelu_tanh<float>(const float*, float*, uint32_t);
template void rope_neox<float>(const float*, const int32_t*, const float*, float*, uint32_t, uint32_t, uint32_t,
                               uint32_t);
template void rope_gptj<float>(const float*, const int32_t*, const float*, float*, uint32_t, uint32_t, uint32_t,
                               uint32_t);
template void embedding<float>(const float*, const int32_t*, float*, uint32_t, uint32_t, uint32_t);
template void silu_gate<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t);
template void gelu_erf<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t);
template void gelu_tanh<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t);
template void rope_neox<qv::bf16>(const qv::bf16*, const int32_t*, const float*, qv::bf16*, uint32_t, uint32_t,
                                  uint32_t, uint32_t);
template void rope_gptj<qv::bf16>(const qv::bf16*, const int32_t*, const float*, qv::bf16*, uint32_t, uint32_t,
                                  uint32_t, uint32_t);
template void embedding<qv::bf16>(const qv::bf16*, const int32_t*, qv::bf16*, uint32_t, uint32_t, uint32_t);
template void silu_gate<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t);
template void gelu_erf<qv::half>(const qv::half*, qv::half*, uint32_t);
template void gelu_tanh<qv::half>(const qv::half*, qv::half*, uint32_t);
template void rope_neox<qv::half>(const qv::half*, const int32_t*, const float*, qv::half*, uint32_t, uint32_t,
                                  uint32_t, uint32_t);
template void rope_gptj<qv::half>(const qv::half*, const int32_t*, const float*, qv::half*, uint32_t, uint32_t,
                                  uint32_t, uint32_t);
template void embedding<qv::half>(const qv::half*, const int32_t*, qv::half*, uint32_t, uint32_t, uint32_t);
