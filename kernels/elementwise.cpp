// Element-wise ops (silu_gate, gelu, convert), rotary position embedding (rope) and the embedding
// gather.
// All use grid-stride loops: the host caps the grid (Vulkan guarantees 65535 blocks per
// dimension) and each thread handles every grid_stride()-th element; consecutive threads touch
// consecutive elements.
#include "common.h"

using qvops::from_f32;
using qvops::kElemThreads;
using qvops::to_f32;

namespace {

QV_DEVICE float silu(float v) { return v / (1.0f + qvops::exp_by_exp2(-v)); }
// 0.5 x (1 + erf(z)), z = x / sqrt(2), with 1 - erf(|z|) = q(t) e^(-z^2), t = 1 / (1 + p |z|), q a
// degree-5 polynomial (Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, i.e. <= 7.5e-8 |x| on gelu,
// far inside the op gate's bound): 1 + erf(z) = q e^(-z^2) for z < 0 (no cancellation) and
// 2 - q e^(-z^2) otherwise. qv::rcp and qv::exp2_ftz (one special-function instruction each on
// PTX; t's 1-ulp error moves q by ~1e-7) and fused Horner steps: ~20 instructions per element,
// where the IEEE reciprocal, exp2's subnormal handling and unfused multiply-adds (PTX keeps
// `a * b + c` as two roundings) took 38 and held gelu_erf bf16 compute-bound at 0.90 of copy
// on the H100 (ncu: issue slots 91% busy). (qv::erf's 21 selects, 8 fmas and a division held
// it at 0.58.)
QV_DEVICE float gelu_erf_of(float v) {
  float a = qv::abs(v) * 0.707106781186547524f;
  float t = qv::rcp(qv::fma(0.3275911f, a, 1.0f));
  float q = t * qv::fma(t, qv::fma(t, qv::fma(t, qv::fma(t, 1.061405429f, -1.453152027f), 1.421413741f), -0.284496736f),
                        0.254829592f);
  float tail = q * qv::exp2_ftz(v * v * -0.721347520444481703f);   // e^(-z^2) = 2^(-x^2 / (2 ln 2))
  return 0.5f * v * (v < 0.0f ? tail : 2.0f - tail);
}
// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): the same function, one exp and a division instead of
// tanh's polynomial-and-exp (which left gelu_tanh bf16 compute-bound at 52% of copy on the H100),
// and without the cancellation of 1 + tanh(u) for u << 0.
QV_DEVICE float gelu_tanh_of(float v) {
  float two_u = 1.595769121605730711f * (v + 0.044715f * v * v * v);   // 2 sqrt(2 / pi) (x + 0.044715 x^3)
  return v / (1.0f + qvops::exp_by_exp2(-two_u));
}

}  // namespace

// The element-wise ops move 16 bytes per access (qvops::load16: 4 float or 8 half / bf16
// elements, C = qvops::chunk_elems<T>()): chunk i of n / C covers elements C i .. C i + C - 1; the
// n % C elements after the last chunk go one by one. The host sizes the grid for n / C threads.

namespace {

QV_DEVICE qv::float4 silu4(qv::float4 v) { return qv::float4(silu(v[0]), silu(v[1]), silu(v[2]), silu(v[3])); }
QV_DEVICE qv::float4 gelu_erf4(qv::float4 v) {
  return qv::float4(gelu_erf_of(v[0]), gelu_erf_of(v[1]), gelu_erf_of(v[2]), gelu_erf_of(v[3]));
}
QV_DEVICE qv::float4 gelu_tanh4(qv::float4 v) {
  return qv::float4(gelu_tanh_of(v[0]), gelu_tanh_of(v[1]), gelu_tanh_of(v[2]), gelu_tanh_of(v[3]));
}

}  // namespace

// out = silu(x) * g = x / (1 + exp(-x)) * g
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void silu_gate(const T* x, const T* g, T* out, uint32_t n) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  uint32_t chunks = n / C;
  for (uint32_t i = qvops::grid_first(); i < chunks; i += qvops::grid_stride()) {
    qv::float4 v_lo, g_lo, v_hi = qv::float4(0.0f, 0.0f, 0.0f, 0.0f), g_hi = qv::float4(0.0f, 0.0f, 0.0f, 0.0f);   // hi: 16-bit T only
    qvops::load16(x + C * i, v_lo, v_hi);
    qvops::load16(g + C * i, g_lo, g_hi);
    qv::float4 r_hi = v_hi;
    if constexpr (C == 8) r_hi = silu4(v_hi) * g_hi;
    qvops::store16(out + C * i, silu4(v_lo) * g_lo, r_hi);
  }
  for (uint32_t i = C * chunks + qvops::grid_first(); i < n; i += qvops::grid_stride())
    out[i] = from_f32<T>(silu(to_f32(x[i])) * to_f32(g[i]));
}

// gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void gelu_erf(const T* x, T* out, uint32_t n) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  uint32_t chunks = n / C;
  for (uint32_t i = qvops::grid_first(); i < chunks; i += qvops::grid_stride()) {
    qv::float4 lo, hi = qv::float4(0.0f, 0.0f, 0.0f, 0.0f);   // hi: 16-bit T only
    qvops::load16(x + C * i, lo, hi);
    if constexpr (C == 8) hi = gelu_erf4(hi);
    qvops::store16(out + C * i, gelu_erf4(lo), hi);
  }
  for (uint32_t i = C * chunks + qvops::grid_first(); i < n; i += qvops::grid_stride())
    out[i] = from_f32<T>(gelu_erf_of(to_f32(x[i])));
}

// The tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void gelu_tanh(const T* x, T* out, uint32_t n) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  uint32_t chunks = n / C;
  for (uint32_t i = qvops::grid_first(); i < chunks; i += qvops::grid_stride()) {
    qv::float4 lo, hi = qv::float4(0.0f, 0.0f, 0.0f, 0.0f);   // hi: 16-bit T only
    qvops::load16(x + C * i, lo, hi);
    if constexpr (C == 8) hi = gelu_tanh4(hi);
    qvops::store16(out + C * i, gelu_tanh4(lo), hi);
  }
  for (uint32_t i = C * chunks + qvops::grid_first(); i < n; i += qvops::grid_stride())
    out[i] = from_f32<T>(gelu_tanh_of(to_f32(x[i])));
}

namespace {

// Rotary embedding of x laid out [tokens][heads][head_dim].
// Pair i < rot_half of a row is rotated by the angle pos[token] * inv_freq[i] (computed in float,
// as the usual f32 implementations do; |angle| < 2^16 * pi / 2, see qvops::sin_cos); pairs past
// the rotary dimensions are copied.
// INTERLEAVED: GPT-J pairs (2i, 2i + 1); otherwise GPT-NeoX pairs (i, i + rot_half).
// When head_dim % 8 == 0 and rot_half % 4 == 0 a thread takes 4 pairs i0 .. i0 + 3 with wide
// accesses (qvops::load4) in up to kRopeHeads heads of one token: the angles depend on the token
// and the pair only, so their sin / cos are computed once for those heads (per head, they held
// bf16 rope at 0.6 of copy on the H100: compute-bound on the accurate sin_cos). All heads' loads
// come before the stores: the stores may alias later loads, so a load-store loop per head runs
// one head at a time (f32 8192x4096 fell from 0.94 to 0.89 of copy with 8 heads that way). Two
// heads, not four, since sin_cos is a short polynomial: four held NVIDIA's Vulkan compiler at 59
// registers (rope bf16 at 0.85 of CUDA's figure; two: 39 registers, 0.92) at no cost on CUDA. The
// host sizes the grid for tokens * ceil(heads / kRopeHeads) * head_dim / 8 threads; consecutive
// threads take consecutive pair groups of one head (coalesced). Otherwise a thread takes one pair.
constexpr uint32_t kRopeHeads = 2;   // runtime/ops/ops.cpp sizes the grid with the same number

// The 8 elements of pairs i0 .. i0 + 3 of one head: (u, v) = elements 2 i0 .. 2 i0 + 7 (GPT-J) or
// i0 .. i0 + 3 and i0 + rot_half .. (NeoX). They stay in T until rope_store: half / bf16 take half
// the registers of floats while the sin / cos are computed (as floats, rope bf16 ran at 60
// registers and half occupancy on the H100).
template <typename T, bool INTERLEAVED>
QV_DEVICE void rope_load(const T* x, uint32_t base, uint32_t i0, uint32_t rot_half, qv::vec<T, 4>& u,
                         qv::vec<T, 4>& v) {
  u = qv::load<4>(x + base + (INTERLEAVED ? 2 * i0 : i0));
  v = qv::load<4>(x + base + (INTERLEAVED ? 2 * i0 + 4 : i0 + rot_half));
}
template <typename T, bool INTERLEAVED>
QV_DEVICE void rope_store(T* out, uint32_t base, uint32_t i0, uint32_t rot_half, qv::vec<T, 4> u_t, qv::vec<T, 4> v_t,
                          qv::float4 c, qv::float4 s) {
  qv::float4 u = qvops::to_float4(u_t), v = qvops::to_float4(v_t);
  if constexpr (INTERLEAVED) {
    qvops::store4(out + base + 2 * i0, qv::float4(u[0] * c[0] - u[1] * s[0], u[1] * c[0] + u[0] * s[0],
                                                  u[2] * c[1] - u[3] * s[1], u[3] * c[1] + u[2] * s[1]));
    qvops::store4(out + base + 2 * i0 + 4, qv::float4(v[0] * c[2] - v[1] * s[2], v[1] * c[2] + v[0] * s[2],
                                                      v[2] * c[3] - v[3] * s[3], v[3] * c[3] + v[2] * s[3]));
  } else {
    qvops::store4(out + base + i0, qvops::fma4(u, c, -(v * s)));
    qvops::store4(out + base + i0 + rot_half, qvops::fma4(v, c, u * s));
  }
}

template <typename T, bool INTERLEAVED>
QV_DEVICE void rope_pairs(const T* x, const int32_t* pos, const float* inv_freq, T* out, uint32_t tokens,
                          uint32_t heads, uint32_t head_dim, uint32_t rot_half) {
  uint32_t half_dim = head_dim / 2;
  if (head_dim % 8 == 0 && rot_half % 4 == 0) {
    uint32_t groups_per_row = half_dim / 4;
    uint32_t head_blocks = (heads + kRopeHeads - 1) / kRopeHeads;
    uint32_t items = tokens * head_blocks * groups_per_row;
    for (uint32_t p = qvops::grid_first(); p < items; p += qvops::grid_stride()) {
      uint32_t token_block = p / groups_per_row;   // token * head_blocks + head block
      uint32_t i0 = 4 * (p - token_block * groups_per_row);
      uint32_t token = token_block / head_blocks;
      uint32_t h0 = (token_block - token * head_blocks) * kRopeHeads;
      uint32_t row0 = (token * heads + h0) * head_dim;   // head h0 + k starts at row0 + k head_dim
      bool has1 = kRopeHeads > 1 && h0 + 1 < heads, has2 = kRopeHeads > 2 && h0 + 2 < heads;
      bool has3 = kRopeHeads > 3 && h0 + 3 < heads;
      if (i0 < rot_half) {
        qv::vec<T, 4> zero(from_f32<T>(0.0f));
        qv::vec<T, 4> u0 = zero, v0 = zero, u1 = zero, v1 = zero, u2 = zero, v2 = zero, u3 = zero, v3 = zero;
        rope_load<T, INTERLEAVED>(x, row0, i0, rot_half, u0, v0);
        if (has1) rope_load<T, INTERLEAVED>(x, row0 + head_dim, i0, rot_half, u1, v1);
        if (has2) rope_load<T, INTERLEAVED>(x, row0 + 2 * head_dim, i0, rot_half, u2, v2);
        if (has3) rope_load<T, INTERLEAVED>(x, row0 + 3 * head_dim, i0, rot_half, u3, v3);
        float position = static_cast<float>(pos[token]);
        qv::float4 freq = qv::load<4>(inv_freq + i0);
        float s0 = 0.0f, c0 = 0.0f, s1 = 0.0f, c1 = 0.0f, s2 = 0.0f, c2 = 0.0f, s3 = 0.0f, c3 = 0.0f;
        qvops::sin_cos(position * freq[0], s0, c0);
        qvops::sin_cos(position * freq[1], s1, c1);
        qvops::sin_cos(position * freq[2], s2, c2);
        qvops::sin_cos(position * freq[3], s3, c3);
        qv::float4 c = qv::float4(c0, c1, c2, c3), s = qv::float4(s0, s1, s2, s3);
        rope_store<T, INTERLEAVED>(out, row0, i0, rot_half, u0, v0, c, s);
        if (has1) rope_store<T, INTERLEAVED>(out, row0 + head_dim, i0, rot_half, u1, v1, c, s);
        if (has2) rope_store<T, INTERLEAVED>(out, row0 + 2 * head_dim, i0, rot_half, u2, v2, c, s);
        if (has3) rope_store<T, INTERLEAVED>(out, row0 + 3 * head_dim, i0, rot_half, u3, v3, c, s);
      } else {   // pairs past the rotary dimensions: elements 2 i0 .. 2 i0 + 7 copied
        uint32_t h_end = qv::min(h0 + kRopeHeads, heads);
        for (uint32_t h = h0; h < h_end; ++h) {
          uint32_t base = (token * heads + h) * head_dim;
          qv::store(out + base + 2 * i0, qv::load<4>(x + base + 2 * i0));
          qv::store(out + base + 2 * i0 + 4, qv::load<4>(x + base + 2 * i0 + 4));
        }
      }
    }
    return;
  }
  uint32_t pairs = tokens * heads * half_dim;
  for (uint32_t p = qvops::grid_first(); p < pairs; p += qvops::grid_stride()) {
    uint32_t row = p / half_dim;
    uint32_t i = p - row * half_dim;
    uint32_t base = row * head_dim;
    if (i < rot_half) {
      uint32_t a = INTERLEAVED ? 2 * i : i;
      uint32_t b = INTERLEAVED ? 2 * i + 1 : i + rot_half;
      float angle = static_cast<float>(pos[row / heads]) * inv_freq[i];
      float c = 0.0f, s = 0.0f, ra = 0.0f, rb = 0.0f;
      qvops::sin_cos(angle, s, c);
      qvops::rotate_pair(to_f32(x[base + a]), to_f32(x[base + b]), s, c, ra, rb);
      out[base + a] = from_f32<T>(ra);
      out[base + b] = from_f32<T>(rb);
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

// out = x converted to D (one rounding to nearest even; 16-bit to 16-bit goes through float,
// which holds both exactly). Eight elements per step: two 16-byte accesses of float, one of a
// 16-bit type, on either side.
namespace {
template <typename T>
QV_DEVICE void load8(const T* p, qv::float4& lo, qv::float4& hi) {
  if constexpr (sizeof(T) == 2) {
    qvops::load16(p, lo, hi);
  } else {
    lo = qvops::load4(p);
    hi = qvops::load4(p + 4);
  }
}
template <typename T>
QV_DEVICE void store8(T* p, qv::float4 lo, qv::float4 hi) {
  if constexpr (sizeof(T) == 2) {
    qvops::store16(p, lo, hi);
  } else {
    qvops::store4(p, lo);
    qvops::store4(p + 4, hi);
  }
}
}  // namespace

template <typename S, typename D>
QV_KERNEL QV_BLOCK(kElemThreads) void convert(const S* x, D* out, uint32_t n) {
  uint32_t chunks = n / 8;
  for (uint32_t i = qvops::grid_first(); i < chunks; i += qvops::grid_stride()) {
    qv::float4 lo, hi;
    load8(x + 8 * i, lo, hi);
    store8(out + 8 * i, lo, hi);
  }
  for (uint32_t i = 8 * chunks + qvops::grid_first(); i < n; i += qvops::grid_stride()) out[i] = from_f32<D>(to_f32(x[i]));
}

template void convert<float, qv::bf16>(const float*, qv::bf16*, uint32_t);
template void convert<float, qv::half>(const float*, qv::half*, uint32_t);
template void convert<qv::bf16, float>(const qv::bf16*, float*, uint32_t);
template void convert<qv::bf16, qv::half>(const qv::bf16*, qv::half*, uint32_t);
template void convert<qv::half, float>(const qv::half*, float*, uint32_t);
template void convert<qv::half, qv::bf16>(const qv::half*, qv::bf16*, uint32_t);

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
