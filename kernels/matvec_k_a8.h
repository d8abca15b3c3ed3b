// The K-quant matrix-vector products' walks on int8 activations (x as ops::quantize_activations_q8
// writes it: the cols int8 quants as words xq, then cols / 32 float scales): matvec_q4_k_a8 on
// q4_k tensors as GGUF stores them, matvec_q6_kr_a8 on q6_k super-blocks with their f16 d moved
// behind the rest (ops::repack_q6_k). As matvec_q4_0r_a8 (kernels/matvec.cpp): blocks of
// kQuantThreads threads on 4 row pairs (2 in the `_split` kernels, qvops::split_row), a subgroup
// per two rows, each weight load 16 bytes, the quants' products summed exactly by qv::dot4_i8 and
// scaled once per 16 or 32 elements. The f32-activation q4_k / q6_k kernels read 16-bit words
// (210-byte q6_k blocks allow nothing wider) and reached 0.49 / 0.55 of a copy of their bytes on
// an H200.
//
// Layout lanes: a row's super-blocks are split among 32 layout lanes, a subgroup's lanes taking
// lanes lane, lane + size, ... (any subgroup size; lanes past 32 of a wider subgroup add zeros).
// The walks are here, the kernels in matvec_k_a8.cpp: programs that fuse their own work into a
// product run them too (tools/quiver-llm: the stacked Q, K, V product with its rotation).
#pragma once

#include "common.h"

namespace qvops {

constexpr uint32_t kSuperElems = 256;   // elements per super-block
constexpr uint32_t kLayoutLanes = 32;

QV_DEVICE float f16_bits(uint32_t v) { return static_cast<float>(qv::bit_cast<qv::half>(static_cast<uint16_t>(v & 0xFFFFu))); }

// ---- q4_k as GGUF stores it --------------------------------------------------------------------
// A super-block is 144 bytes, nine aligned 16-byte words: the header (f16 d, f16 dmin, 12 bytes
// of 6-bit scales and mins) and 128 nibble bytes; nibble byte 32c + i holds element 64c + i
// (sub-block 2c) low and 64c + 32 + i (sub-block 2c + 1) high; w = d scale_s q - dmin min_s. So a
// q4_k tensor needs no repacking for 16-byte loads. Layout lane l takes super-blocks l / 8,
// l / 8 + 4, ... and in each nibble word 1 + l % 8: part p = l % 8 is half p % 2 of nibble chunk
// c = p / 2 (16 elements of each of sub-blocks 2c and 2c + 1). The 8 lanes of a super-block all
// load its header (one address).
constexpr uint32_t kQ4KWords = 36;      // 32-bit words per super-block
constexpr uint32_t kQ4KLanes = 8;       // layout lanes per super-block

// The 6-bit scales and mins of sub-blocks 2c (low byte) and 2c + 1 (high byte) from the header h
// (words 1-3: scale bytes 0-11). Sub-block s < 4: the low 6 bits of bytes s (scale) and s + 4
// (min); s >= 4: the nibbles of byte s + 4 under the top 2 bits of bytes s - 4 and s.
QV_DEVICE void q4_k_scale_pair(qv::vec<uint32_t, 4> h, uint32_t c, uint32_t& scales, uint32_t& mins) {
  uint32_t shift = 16 * (c % 2);
  if (c < 2) {
    scales = (h[1] >> shift) & 0x3F3Fu;
    mins = (h[2] >> shift) & 0x3F3Fu;
  } else {
    scales = ((h[3] >> shift) & 0x0F0Fu) | ((h[1] >> (shift + 2)) & 0x3030u);
    mins = ((h[3] >> (shift + 4)) & 0x0F0Fu) | ((h[2] >> (shift + 2)) & 0x3030u);
  }
}

// One row's part of a super-block: header h, nibble word q; the activations' quants at the low
// (xl) and high (xh) nibbles' elements, their scales dl, dh and quant sums sl, sh (the mins'
// term). The integer products and sums are exact, and exact in float (below 2^24).
QV_DEVICE float q4_k_part(qv::vec<uint32_t, 4> h, qv::vec<uint32_t, 4> q, qv::vec<uint32_t, 4> xl,
                          qv::vec<uint32_t, 4> xh, float dl, float dh, int32_t sl, int32_t sh, uint32_t c) {
  int32_t lo = qv::dot4_i8(q[0] & 0x0F0F0F0Fu, xl[0], 0), hi = qv::dot4_i8((q[0] >> 4) & 0x0F0F0F0Fu, xh[0], 0);
  lo = qv::dot4_i8(q[1] & 0x0F0F0F0Fu, xl[1], lo);
  hi = qv::dot4_i8((q[1] >> 4) & 0x0F0F0F0Fu, xh[1], hi);
  lo = qv::dot4_i8(q[2] & 0x0F0F0F0Fu, xl[2], lo);
  hi = qv::dot4_i8((q[2] >> 4) & 0x0F0F0F0Fu, xh[2], hi);
  lo = qv::dot4_i8(q[3] & 0x0F0F0F0Fu, xl[3], lo);
  hi = qv::dot4_i8((q[3] >> 4) & 0x0F0F0F0Fu, xh[3], hi);
  uint32_t scales, mins;
  q4_k_scale_pair(h, c, scales, mins);
  int32_t s0 = static_cast<int32_t>(scales & 0xFFu), s1 = static_cast<int32_t>(scales >> 8);
  int32_t m0 = static_cast<int32_t>(mins & 0xFFu), m1 = static_cast<int32_t>(mins >> 8);
  float qx = qv::fma(static_cast<float>(s1 * hi), dh, static_cast<float>(s0 * lo) * dl);
  float mx = qv::fma(static_cast<float>(m1 * sh), dh, static_cast<float>(m0 * sl) * dl);
  return qv::fma(f16_bits(h[0]), qx, -(f16_bits(h[0] >> 16) * mx));
}

// Super-block b of both rows (their first super-blocks at words o0, o1) for layout part p.
QV_DEVICE void q4_k_loads(const uint32_t* w, uint32_t o0, uint32_t o1, uint32_t b, uint32_t p,
                          qv::vec<uint32_t, 4>& h0, qv::vec<uint32_t, 4>& q0, qv::vec<uint32_t, 4>& h1,
                          qv::vec<uint32_t, 4>& q1) {
  uint32_t at = b * kQ4KWords;
  h0 = qv::load<4>(w + (o0 + at));
  q0 = qv::load<4>(w + (o0 + at + 4 + 4 * p));
  h1 = qv::load<4>(w + (o1 + at));
  q1 = qv::load<4>(w + (o1 + at + 4 + 4 * p));
}
QV_DEVICE void q4_k_math(qv::vec<uint32_t, 4> h0, qv::vec<uint32_t, 4> q0, qv::vec<uint32_t, 4> h1,
                         qv::vec<uint32_t, 4> q1, const uint32_t* xq, const float* xd, uint32_t b, uint32_t p,
                         float& a0, float& a1) {
  uint32_t c = p / 2;
  uint32_t e = b * kSuperElems + 64 * c + 16 * (p % 2);   // the low nibbles' first element
  qv::vec<uint32_t, 4> xl = qv::load<4>(xq + e / 4), xh = qv::load<4>(xq + (e + 32) / 4);
  qv::vec<float, 2> dx = qv::load<2>(xd + (8 * b + 2 * c));
  const uint32_t ones = 0x01010101u;
  int32_t sl = qv::dot4_i8(ones, xl[3], qv::dot4_i8(ones, xl[2], qv::dot4_i8(ones, xl[1], qv::dot4_i8(ones, xl[0], 0))));
  int32_t sh = qv::dot4_i8(ones, xh[3], qv::dot4_i8(ones, xh[2], qv::dot4_i8(ones, xh[1], qv::dot4_i8(ones, xh[0], 0))));
  a0 += q4_k_part(h0, q0, xl, xh, dx[0], dx[1], sl, sh, c);
  a1 += q4_k_part(h1, q1, xl, xh, dx[0], dx[1], sl, sh, c);
}

// ---- q6_k with d split off (ops::repack_q6_k) --------------------------------------------------
// The 208 bytes before a q6_k super-block's d (128 bytes ql, 64 bytes qh, 16 int8 scales) for
// every super-block of every row, then every d: thirteen aligned 16-byte words a super-block.
// Element 128n + 32k + l (n < 2, k < 4, l < 32) has the low (k < 2) or high nibble of ql byte
// 64n + 32 (k % 2) + l as its low 4 bits, bits 2k, 2k + 1 of qh byte 32n + l as its top 2, and
// scale 8n + 2k + l / 16; w = d scale (q - 32). Layout lane l takes super-blocks l / 4, l / 4 + 8,
// ... and in each the 64 elements of n = p / 2, l in 16 (p % 2) .. + 15 (part p = l % 4): three
// 16-byte loads (ql bytes for k = 0, 2 and k = 1, 3; qh bytes) and 8 scale bytes.
constexpr uint32_t kQ6KWords = 52;      // 32-bit words per super-block, d excluded
constexpr uint32_t kQ6KLanes = 4;

// The 6-bit quants of elements k of four l (a byte each) from their ql bytes `lo` and qh bytes h,
// as signed bytes q - 32 (+ 0x60 keeps each byte below 0x100, ^ 0x80 reads 96 + q as q - 32).
template <uint32_t K>
QV_DEVICE uint32_t q6_k_signed(uint32_t lo, uint32_t h) {
  uint32_t low = (K < 2 ? lo : lo >> 4) & 0x0F0F0F0Fu;
  uint32_t high = ((h >> (2 * K)) & 0x03030303u) << 4;
  return ((low | high) + 0x60606060u) ^ 0x80808080u;
}
// Elements k of the lane's 16 (ql words a, qh words h) times the activations' quants x.
template <uint32_t K>
QV_DEVICE int32_t q6_k_dot(qv::vec<uint32_t, 4> a, qv::vec<uint32_t, 4> h, qv::vec<uint32_t, 4> x) {
  int32_t s = qv::dot4_i8(q6_k_signed<K>(a[0], h[0]), x[0], 0);
  s = qv::dot4_i8(q6_k_signed<K>(a[1], h[1]), x[1], s);
  s = qv::dot4_i8(q6_k_signed<K>(a[2], h[2]), x[2], s);
  return qv::dot4_i8(q6_k_signed<K>(a[3], h[3]), x[3], s);
}
// The int8 scale in byte `shift / 8` of v.
QV_DEVICE int32_t q6_k_scale(uint32_t v, uint32_t shift) { return static_cast<int32_t>(((v >> shift) & 0xFFu) ^ 0x80u) - 128; }

// One row's part: ql words a (k = 0, 2) and c (k = 1, 3), qh words h, scale bytes 8n .. 8n + 7
// in s, the f16 d; the activations' quants xk and scales dx (k = 0 .. 3). |scale (q . x)| <= 128
// 16 32 127 < 2^24: exact in float.
QV_DEVICE float q6_k_part(qv::vec<uint32_t, 4> a, qv::vec<uint32_t, 4> c, qv::vec<uint32_t, 4> h,
                          qv::vec<uint32_t, 2> s, qv::half d, qv::vec<uint32_t, 4> x0, qv::vec<uint32_t, 4> x1,
                          qv::vec<uint32_t, 4> x2, qv::vec<uint32_t, 4> x3, qv::float4 dx, uint32_t shift) {
  float sum = static_cast<float>(q6_k_scale(s[0], shift) * q6_k_dot<0>(a, h, x0)) * dx[0];
  sum = qv::fma(static_cast<float>(q6_k_scale(s[0], shift + 16) * q6_k_dot<1>(c, h, x1)), dx[1], sum);
  sum = qv::fma(static_cast<float>(q6_k_scale(s[1], shift) * q6_k_dot<2>(a, h, x2)), dx[2], sum);
  sum = qv::fma(static_cast<float>(q6_k_scale(s[1], shift + 16) * q6_k_dot<3>(c, h, x3)), dx[3], sum);
  return static_cast<float>(d) * sum;
}

QV_DEVICE void q6_k_loads(const uint32_t* w, const qv::half* d, uint32_t o, uint32_t b, uint32_t p,
                          qv::vec<uint32_t, 4>& a, qv::vec<uint32_t, 4>& c, qv::vec<uint32_t, 4>& h,
                          qv::vec<uint32_t, 2>& s, qv::half& dv) {
  uint32_t at = (o + b) * kQ6KWords, n = p / 2, half = p % 2;
  a = qv::load<4>(w + (at + 16 * n + 4 * half));
  c = qv::load<4>(w + (at + 16 * n + 8 + 4 * half));
  h = qv::load<4>(w + (at + 32 + 8 * n + 4 * half));
  s = qv::load<2>(w + (at + 48 + 2 * n));
  dv = d[o + b];
}

// Super-block b of both rows (their first super-blocks' indices o0, o1) for layout part p; the d
// of every super-block start at d.
QV_DEVICE void q6_k_block(const uint32_t* w, const qv::half* d, uint32_t o0, uint32_t o1, const uint32_t* xq,
                          const float* xd, uint32_t b, uint32_t p, float& a0, float& a1) {
  qv::vec<uint32_t, 4> a0w, c0w, h0w, a1w, c1w, h1w;
  qv::vec<uint32_t, 2> s0, s1;
  qv::half d0, d1;
  q6_k_loads(w, d, o0, b, p, a0w, c0w, h0w, s0, d0);
  q6_k_loads(w, d, o1, b, p, a1w, c1w, h1w, s1, d1);
  uint32_t n = p / 2, half = p % 2;
  uint32_t e = b * kSuperElems + 128 * n + 16 * half;   // element l = 16 half of k = 0; k steps by 32
  qv::vec<uint32_t, 4> x0 = qv::load<4>(xq + e / 4), x1 = qv::load<4>(xq + (e + 32) / 4),
                       x2 = qv::load<4>(xq + (e + 64) / 4), x3 = qv::load<4>(xq + (e + 96) / 4);
  qv::float4 dx = qv::load<4>(xd + (8 * b + 4 * n));
  // Scale 8n + 2k + half: byte half of s[0] (k = 0), half + 2 (k = 1), of s[1] for k = 2, 3.
  a0 += q6_k_part(a0w, c0w, h0w, s0, d0, x0, x1, x2, x3, dx, 8 * half);
  a1 += q6_k_part(a1w, c1w, h1w, s1, d1, x0, x1, x2, x3, dx, 8 * half);
}

// w: the q4_k tensor's bytes as words; xq, xd: the activations' buffer as words and as float.
// A lane issues two super-blocks' weight loads before their arithmetic (eight of 16 bytes).
template <uint32_t P>
QV_DEVICE void matvec_q4_k_rows(const uint32_t* w, const uint32_t* xq, const float* xd, float* y, uint32_t rows,
                                uint32_t cols) {
  uint32_t sg = qv::subgroup_size(), blocks = cols / kSuperElems, span = kLayoutLanes / kQ4KLanes, first, end;
  qvops::split_range<P>(blocks, sg, first, end);
  const float* xs = xd + cols / 4;   // the activations' scales follow their quants
  for (uint32_t step = 0; step < qvops::split_steps<P>(sg); ++step) {
    bool valid0, valid1;
    uint32_t row1, row0 = qvops::split_row<P>(step, sg, rows, valid0, valid1, row1);
    float a0 = 0.0f, a1 = 0.0f;
    if (valid0) {
      uint32_t o0 = row0 * blocks * kQ4KWords, o1 = row1 * blocks * kQ4KWords;
      for (uint32_t l = qv::subgroup_lane(); l < kLayoutLanes; l += sg) {
        uint32_t p = l % kQ4KLanes, b = first + l / kQ4KLanes;
        for (; b + span < end; b += 2 * span) {
          qv::vec<uint32_t, 4> h0, q0, h1, q1, h2, q2, h3, q3;
          q4_k_loads(w, o0, o1, b, p, h0, q0, h1, q1);
          q4_k_loads(w, o0, o1, b + span, p, h2, q2, h3, q3);
          q4_k_math(h0, q0, h1, q1, xq, xs, b, p, a0, a1);
          q4_k_math(h2, q2, h3, q3, xq, xs, b + span, p, a0, a1);
        }
        if (b < end) {
          qv::vec<uint32_t, 4> h0, q0, h1, q1;
          q4_k_loads(w, o0, o1, b, p, h0, q0, h1, q1);
          q4_k_math(h0, q0, h1, q1, xq, xs, b, p, a0, a1);
        }
      }
    }
    qvops::split_store<P>(y, row0, valid0, valid1, a0, a1, sg, rows, step);
  }
}

// w, d: ops::repack_q6_k's bytes as words and as f16 (the d from byte rows * cols / 256 * 208).
// A super-block's six weight loads of a row pair are issued together (q6_k_block).
template <uint32_t P>
QV_DEVICE void matvec_q6_kr_rows(const uint32_t* w, const qv::half* d, const uint32_t* xq, const float* xd, float* y,
                                 uint32_t rows, uint32_t cols) {
  uint32_t sg = qv::subgroup_size(), blocks = cols / kSuperElems, span = kLayoutLanes / kQ6KLanes, first, end;
  qvops::split_range<P>(blocks, sg, first, end);
  const qv::half* ds = d + rows * blocks * (2 * kQ6KWords);
  const float* xs = xd + cols / 4;
  for (uint32_t step = 0; step < qvops::split_steps<P>(sg); ++step) {
    bool valid0, valid1;
    uint32_t row1, row0 = qvops::split_row<P>(step, sg, rows, valid0, valid1, row1);
    float a0 = 0.0f, a1 = 0.0f;
    if (valid0) {
      for (uint32_t l = qv::subgroup_lane(); l < kLayoutLanes; l += sg)
        for (uint32_t b = first + l / kQ6KLanes; b < end; b += span)
          q6_k_block(w, ds, row0 * blocks, row1 * blocks, xq, xs, b, l % kQ6KLanes, a0, a1);
    }
    qvops::split_store<P>(y, row0, valid0, valid1, a0, a1, sg, rows, step);
  }
}

}  // namespace qvops
