// Row normalisations: rms_norm, layer_norm and add_rms_norm (residual add fused with rms_norm).
// One block per row; each thread walks the row in steps of kRowThreads * W elements, W = 4 (one
// wide access) when cols % 4 == 0 and 1 otherwise, so any cols works and consecutive threads
// touch consecutive elements (coalesced). Statistics are accumulated in
// float and combined with qv::block_sum.
#include "common.h"

using qvops::kRowThreads;
using qvops::load_w;
using qvops::store_w;

namespace {

// The row loops of one block, W elements per thread and step (see qvops::load_w).
template <uint32_t W, typename T>
QV_DEVICE void rms_norm_row(const T* x, const T* w, T* out, uint32_t base, uint32_t cols, float eps) {
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
    qv::float4 v = load_w<W>(x + base + c);
    squares += qvops::sum4(v * v);
  }
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W)
    store_w<W>(out + base + c, load_w<W>(x + base + c) * inv_rms * load_w<W>(w + c));
}

template <typename T>
QV_DEVICE void rms_norm_row_cached(const T* x, const T* w, T* out, uint32_t base, uint32_t cols, float eps) {
  qv::float4 v0, v1, v2, v3, wa, wb;
  qvops::row_load(x + base, cols, 0.0f, v0, v1, v2, v3);
  float squares = (qvops::sum4(v0 * v0) + qvops::sum4(v1 * v1)) + (qvops::sum4(v2 * v2) + qvops::sum4(v3 * v3));
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  qvops::row_pair_load(w, cols, 0, 0.0f, wa, wb);
  qvops::row_pair_store(out + base, cols, 0, v0 * inv_rms * wa, v1 * inv_rms * wb);
  qvops::row_pair_load(w, cols, 1, 0.0f, wa, wb);
  qvops::row_pair_store(out + base, cols, 1, v2 * inv_rms * wa, v3 * inv_rms * wb);
}

// Chunk j (slots 2j, 2j + 1) of a half / bf16 row: out = y * w + b for the normalised y = (lo, hi).
template <typename T>
QV_DEVICE void layer_norm_chunk_out(const T* w, const T* b, T* row_out, uint32_t cols, uint32_t j, qv::float4 lo,
                                    qv::float4 hi) {
  if (!qvops::row_slot_in<T>(cols, 2 * j)) return;
  uint32_t c = qvops::row_slot_col<T>(2 * j);
  qv::vec<T, 8> wv = qv::load<8>(w + c), bv = qv::load<8>(b + c);
  qvops::store16(row_out + c, qvops::fma4(lo, qvops::to_float4_lo(wv), qvops::to_float4_lo(bv)),
                 qvops::fma4(hi, qvops::to_float4_hi(wv), qvops::to_float4_hi(bv)));
}

template <typename T>
QV_DEVICE void layer_norm_row_cached(const T* x, const T* w, const T* b, T* out, uint32_t base, uint32_t cols,
                                     float eps) {
  qv::float4 v0, v1, v2, v3, wa, wb, ba, bb;
  qvops::row_load(x + base, cols, 0.0f, v0, v1, v2, v3);
  float sum = (qvops::sum4(v0) + qvops::sum4(v1)) + (qvops::sum4(v2) + qvops::sum4(v3));
  float mean = qv::block_sum(sum) / static_cast<float>(cols);
  // Slots past the row's end hold zeros, not data: they must not add mean^2 to the variance.
  qv::float4 zero(0.0f);
  qv::float4 d0 = qvops::row_slot_in<T>(cols, 0) ? v0 - mean : zero;
  qv::float4 d1 = qvops::row_slot_in<T>(cols, 1) ? v1 - mean : zero;
  qv::float4 d2 = qvops::row_slot_in<T>(cols, 2) ? v2 - mean : zero;
  qv::float4 d3 = qvops::row_slot_in<T>(cols, 3) ? v3 - mean : zero;
  float squares = (qvops::sum4(d0 * d0) + qvops::sum4(d1 * d1)) + (qvops::sum4(d2 * d2) + qvops::sum4(d3 * d3));
  float inv_std = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  if constexpr (qvops::chunk_elems<T>() == 8) {
    // w and b stay half / bf16 until used: as floats, loaded ahead of their use, they held
    // layer_norm bf16 at 47 registers (five blocks per multiprocessor on the H100).
    layer_norm_chunk_out(w, b, out + base, cols, 0, d0 * inv_std, d1 * inv_std);
    layer_norm_chunk_out(w, b, out + base, cols, 1, d2 * inv_std, d3 * inv_std);
  } else {
    qvops::row_pair_load(w, cols, 0, 0.0f, wa, wb);
    qvops::row_pair_load(b, cols, 0, 0.0f, ba, bb);
    qvops::row_pair_store(out + base, cols, 0, qvops::fma4(d0 * inv_std, wa, ba), qvops::fma4(d1 * inv_std, wb, bb));
    qvops::row_pair_load(w, cols, 1, 0.0f, wa, wb);
    qvops::row_pair_load(b, cols, 1, 0.0f, ba, bb);
    qvops::row_pair_store(out + base, cols, 1, qvops::fma4(d2 * inv_std, wa, ba), qvops::fma4(d3 * inv_std, wb, bb));
  }
}

template <uint32_t W, typename T>
QV_DEVICE void layer_norm_row(const T* x, const T* w, const T* b, T* out, uint32_t base, uint32_t cols,
                              float eps) {
  float sum = 0.0f;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) sum += qvops::sum4(load_w<W>(x + base + c));
  float mean = qv::block_sum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
    qv::float4 d = load_w<W>(x + base + c) - mean;
    if constexpr (W == 1) d = qv::float4(d[0], 0.0f, 0.0f, 0.0f);   // the zero lanes are not data
    squares += qvops::sum4(d * d);
  }
  float inv_std = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W)
    store_w<W>(out + base + c, (load_w<W>(x + base + c) - mean) * inv_std * load_w<W>(w + c) + load_w<W>(b + c));
}

// A short row that fits the subgroup's registers (qvops::short_row_fits): read once.
template <typename T>
QV_DEVICE void rms_norm_short_cached(const T* in, const T* w, T* out, uint32_t cols, float eps, bool valid) {
  qv::float4 v0(0.0f), v1(0.0f), v2(0.0f), v3(0.0f), v4(0.0f), v5(0.0f), v6(0.0f), v7(0.0f);
  if (valid) qvops::short_row_load(in, cols, 0.0f, v0, v1, v2, v3, v4, v5, v6, v7);
  using qvops::sum4;
  float squares = ((sum4(v0 * v0) + sum4(v1 * v1)) + (sum4(v2 * v2) + sum4(v3 * v3))) +
                  ((sum4(v4 * v4) + sum4(v5 * v5)) + (sum4(v6 * v6) + sum4(v7 * v7)));
  float inv_rms = qv::rsqrt(qv::subgroup_sum(squares) / static_cast<float>(cols) + eps);
  if (valid) {
    qv::float4 w0, w1, w2, w3, w4, w5, w6, w7;
    qvops::short_row_load(w, cols, 0.0f, w0, w1, w2, w3, w4, w5, w6, w7);
    qvops::short_row_store(out, cols, v0 * inv_rms * w0, v1 * inv_rms * w1, v2 * inv_rms * w2, v3 * inv_rms * w3,
                           v4 * inv_rms * w4, v5 * inv_rms * w5, v6 * inv_rms * w6, v7 * inv_rms * w7);
  }
}

// Short rows (kernels/common.h): a subgroup per row, one pass per statistic and one that writes.
template <typename T>
QV_DEVICE void rms_norm_subgroup_rows(const T* x, const T* w, T* out, uint32_t rows, uint32_t cols, float eps) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  for (uint32_t step = 0; step < qvops::short_row_steps(); ++step) {
    bool valid = false;
    uint32_t row = qvops::short_row(step, rows, valid);
    const T* in = x + row * cols;
    if (qvops::short_row_fits(cols)) {   // uniform: cols and the subgroup size
      rms_norm_short_cached(in, w, out + row * cols, cols, eps, valid);
      continue;
    }
    qv::float4 zero(0.0f);
    float squares = 0.0f;
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero;
        qvops::load16(in + c, lo, hi);
        squares += qvops::chunk_sum<T>(lo * lo, hi * hi);
      }
    }
    float inv_rms = qv::rsqrt(qv::subgroup_sum(squares) / static_cast<float>(cols) + eps);
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero, w_lo, w_hi = zero;
        qvops::load16(in + c, lo, hi);
        qvops::load16(w + c, w_lo, w_hi);
        qvops::store16(out + row * cols + c, lo * inv_rms * w_lo, hi * inv_rms * w_hi);
      }
    }
  }
}

template <typename T>
QV_DEVICE void layer_norm_subgroup_rows(const T* x, const T* w, const T* b, T* out, uint32_t rows, uint32_t cols, float eps) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  for (uint32_t step = 0; step < qvops::short_row_steps(); ++step) {
    bool valid = false;
    uint32_t row = qvops::short_row(step, rows, valid);
    const T* in = x + row * cols;
    qv::float4 zero(0.0f);
    float sum = 0.0f;
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero;
        qvops::load16(in + c, lo, hi);
        sum += qvops::chunk_sum<T>(lo, hi);
      }
    }
    float mean = qv::subgroup_sum(sum) / static_cast<float>(cols);
    float squares = 0.0f;
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero;
        qvops::load16(in + c, lo, hi);
        squares += qvops::chunk_sum<T>((lo - mean) * (lo - mean), (hi - mean) * (hi - mean));
      }
    }
    float inv_std = qv::rsqrt(qv::subgroup_sum(squares) / static_cast<float>(cols) + eps);
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero, w_lo, w_hi = zero, b_lo, b_hi = zero;
        qvops::load16(in + c, lo, hi);
        qvops::load16(w + c, w_lo, w_hi);
        qvops::load16(b + c, b_lo, b_hi);
        qvops::store16(out + row * cols + c, (lo - mean) * inv_std * w_lo + b_lo, (hi - mean) * inv_std * w_hi + b_hi);
      }
    }
  }
}

// The sum as stored: rounded to T (the statistics use the stored sum; identity for float).
template <typename T>
QV_DEVICE qv::float4 stored4(qv::float4 v) {
  using qvops::from_f32;
  using qvops::to_f32;
  return qv::float4(to_f32(from_f32<T>(v[0])), to_f32(from_f32<T>(v[1])), to_f32(from_f32<T>(v[2])),
                    to_f32(from_f32<T>(v[3])));
}

// Each thread re-reads only the sums it stored itself: no barrier between the loops.
template <uint32_t W, typename T>
QV_DEVICE void add_rms_norm_row(const T* x, const T* residual, const T* w, T* sum, T* out, uint32_t base,
                                uint32_t cols, float eps) {
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
    qv::float4 v = stored4<T>(load_w<W>(x + base + c) + load_w<W>(residual + base + c));
    store_w<W>(sum + base + c, v);
    squares += qvops::sum4(v * v);
  }
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W)
    store_w<W>(out + base + c, load_w<W>(sum + base + c) * inv_rms * load_w<W>(w + c));
}

// Rows of at most qvops::kCachedCols elements keep their sums in registers (as rms_norm does).
// Reading each sum back right after storing it (to get the rounded value) put a store-to-load
// round trip in every step: add_rms_norm f32 32768 x 4096 ran at 0.92 of copy on the H100 where
// rms_norm ran at 0.99.
template <typename T>
QV_DEVICE void add_rms_norm_row_cached(const T* x, const T* residual, const T* w, T* sum, T* out, uint32_t base,
                                       uint32_t cols, float eps) {
  qv::float4 s0, s1, s2, s3, ra, rb;
  qvops::row_pair_load(x + base, cols, 0, 0.0f, s0, s1);
  qvops::row_pair_load(residual + base, cols, 0, 0.0f, ra, rb);
  s0 = stored4<T>(s0 + ra);
  s1 = stored4<T>(s1 + rb);
  qvops::row_pair_load(x + base, cols, 1, 0.0f, s2, s3);
  qvops::row_pair_load(residual + base, cols, 1, 0.0f, ra, rb);
  s2 = stored4<T>(s2 + ra);
  s3 = stored4<T>(s3 + rb);
  qvops::row_store(sum + base, cols, s0, s1, s2, s3);
  float squares = (qvops::sum4(s0 * s0) + qvops::sum4(s1 * s1)) + (qvops::sum4(s2 * s2) + qvops::sum4(s3 * s3));
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  qv::float4 wa, wb;
  qvops::row_pair_load(w, cols, 0, 0.0f, wa, wb);
  qvops::row_pair_store(out + base, cols, 0, s0 * inv_rms * wa, s1 * inv_rms * wb);
  qvops::row_pair_load(w, cols, 1, 0.0f, wa, wb);
  qvops::row_pair_store(out + base, cols, 1, s2 * inv_rms * wa, s3 * inv_rms * wb);
}

}  // namespace

// out[r, c] = x[r, c] * w[c] / sqrt(mean_c(x[r, c]^2) + eps)
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void rms_norm(const T* x, const T* w, T* out, uint32_t rows, uint32_t cols,
                                              float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;   // uniform per block
  if (qvops::row_cached<T>(cols)) rms_norm_row_cached(x, w, out, row * cols, cols, eps);
  else if (cols % 4 == 0) rms_norm_row<4>(x, w, out, row * cols, cols, eps);
  else rms_norm_row<1>(x, w, out, row * cols, cols, eps);
}

// out[r, c] = (x[r, c] - mean) / sqrt(var + eps) * w[c] + b[c]; two passes over the row (mean,
// then the variance around it), which avoids the cancellation of E[x^2] - E[x]^2.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void layer_norm(const T* x, const T* w, const T* b, T* out, uint32_t rows,
                                                uint32_t cols, float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  if (qvops::row_cached<T>(cols)) layer_norm_row_cached(x, w, b, out, row * cols, cols, eps);
  else if (cols % 4 == 0) layer_norm_row<4>(x, w, b, out, row * cols, cols, eps);
  else layer_norm_row<1>(x, w, b, out, row * cols, cols, eps);
}

// sum = x + residual (stored as T: the next layer's residual), out = rms_norm(sum) * w.
// The statistics use the stored (rounded) sum, so the result equals a separate add followed by
// rms_norm.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void add_rms_norm(const T* x, const T* residual, const T* w, T* sum, T* out,
                                                  uint32_t rows, uint32_t cols, float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  if (qvops::row_cached<T>(cols)) add_rms_norm_row_cached(x, residual, w, sum, out, row * cols, cols, eps);
  else if (cols % 4 == 0) add_rms_norm_row<4>(x, residual, w, sum, out, row * cols, cols, eps);
  else add_rms_norm_row<1>(x, residual, w, sum, out, row * cols, cols, eps);
}

namespace {

constexpr uint32_t kQ8Step = 4 * kRowThreads;   // elements of one step of add_rms_norm_q8's walk
constexpr uint32_t kQ8HeldSteps = 4;            // rows of up to 4 steps (4096 floats) stay in registers

// Step k's 4 elements of this thread: zeros past the row.
QV_DEVICE qv::float4 q8_slot(const float* row, uint32_t cols, uint32_t k, uint32_t t) {
  uint32_t c = k * kQ8Step + 4 * t;
  return c < cols ? qv::load<4>(row + c) : qv::float4(0.0f, 0.0f, 0.0f, 0.0f);
}
QV_DEVICE void store_slot(float* row, uint32_t cols, uint32_t k, uint32_t t, qv::float4 v) {
  uint32_t c = k * kQ8Step + 4 * t;
  if (c < cols) qv::store(row + c, v);
}

// Step k's out values o stored and quantized, their blocks' maxima in part's slot `slot`
// (part[slot kRowThreads + t]).
template <typename Part>
QV_DEVICE void q8_store_slot(const Part& part, uint32_t slot, float* out, uint32_t* xq, float* xd, uint32_t base,
                             uint32_t words, uint32_t cols, uint32_t k, uint32_t t, qv::float4 o) {
  uint32_t c = k * kQ8Step + 4 * t;
  if (c >= cols) return;   // cols % 32 == 0: a block's 8 threads are all in or all out
  qv::store(out + base + c, o);
  float d = qvops::q8_store_quants(part, slot * kRowThreads + t, o, xq, words + c / 4);
  if (t % 8 == 0) xd[words + cols / 4 + c / 32] = d;   // xd is xq's buffer: the row's scales follow its quants
}

}  // namespace

// add_rms_norm of float rows (cols a multiple of 32) that also writes out as int8 activations,
// exactly as ops::quantize_activations_q8 would from out (kernels/matvec.cpp): a decode step's
// norm and the int8 input of the products after it in one launch. Row r's quants are words
// r (cols / 4 + cols / 32) .., its scales the cols / 32 floats after them. A thread takes 4
// elements a step of kQ8Step; the blocks' maxima go through workgroup memory (any subgroup
// size). Rows of up to kQ8HeldSteps steps (a Llama embedding of 4096) keep the sums in
// registers and meet at one barrier for all their maxima: a step at a time, reading each sum
// back and a barrier per step, took 8.1 us for 4096 floats on an H200 where add_rms_norm takes
// 4.5 and a separate quantize_activations_q8 2.8.
QV_KERNEL QV_BLOCK(kRowThreads) void add_rms_norm_q8(const float* x, const float* residual, const float* w, float* sum,
                                                     float* out, uint32_t* xq, float* xd, uint32_t rows, uint32_t cols,
                                                     float eps) {
  qv::shared<float, kQ8HeldSteps * kRowThreads> part;
  uint32_t row = qvops::block_row();
  if (row >= rows) return;   // uniform per block
  uint32_t base = row * cols, t = qv::thread_id_x();
  uint32_t words = row * (cols / 4 + cols / 32);   // this row's quants, then its scales
  if (cols <= kQ8HeldSteps * kQ8Step) {
    qv::float4 s0 = q8_slot(x + base, cols, 0, t) + q8_slot(residual + base, cols, 0, t);
    qv::float4 s1 = q8_slot(x + base, cols, 1, t) + q8_slot(residual + base, cols, 1, t);
    qv::float4 s2 = q8_slot(x + base, cols, 2, t) + q8_slot(residual + base, cols, 2, t);
    qv::float4 s3 = q8_slot(x + base, cols, 3, t) + q8_slot(residual + base, cols, 3, t);
    store_slot(sum + base, cols, 0, t, s0);
    store_slot(sum + base, cols, 1, t, s1);
    store_slot(sum + base, cols, 2, t, s2);
    store_slot(sum + base, cols, 3, t, s3);
    float squares = (qvops::sum4(s0 * s0) + qvops::sum4(s1 * s1)) + (qvops::sum4(s2 * s2) + qvops::sum4(s3 * s3));
    float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
    qv::float4 o0 = s0 * inv_rms * q8_slot(w, cols, 0, t), o1 = s1 * inv_rms * q8_slot(w, cols, 1, t);
    qv::float4 o2 = s2 * inv_rms * q8_slot(w, cols, 2, t), o3 = s3 * inv_rms * q8_slot(w, cols, 3, t);
    part[t] = qvops::abs_max4(o0);
    part[kRowThreads + t] = qvops::abs_max4(o1);
    part[2 * kRowThreads + t] = qvops::abs_max4(o2);
    part[3 * kRowThreads + t] = qvops::abs_max4(o3);
    qv::barrier();
    q8_store_slot(part, 0, out, xq, xd, base, words, cols, 0, t, o0);
    q8_store_slot(part, 1, out, xq, xd, base, words, cols, 1, t, o1);
    q8_store_slot(part, 2, out, xq, xd, base, words, cols, 2, t, o2);
    q8_store_slot(part, 3, out, xq, xd, base, words, cols, 3, t, o3);
    return;
  }
  float squares = 0.0f;
  for (uint32_t c = 4 * t; c < cols; c += kQ8Step) {
    qv::float4 v = qv::load<4>(x + base + c) + qv::load<4>(residual + base + c);
    qv::store(sum + base + c, v);
    squares += qvops::sum4(v * v);
  }
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t k = 0; k * kQ8Step < cols; ++k) {   // uniform: every thread meets the barriers
    qv::float4 o = q8_slot(sum + base, cols, k, t) * inv_rms * q8_slot(w, cols, k, t);
    part[t] = qvops::abs_max4(o);
    qv::barrier();
    q8_store_slot(part, 0, out, xq, xd, base, words, cols, k, t, o);
    qv::barrier();   // part is rewritten by the next step
  }
}

constexpr uint32_t kWideThreads = 1024;   // add_rms_norm_q8_wide's block: 4 elements a thread

// add_rms_norm_q8 for rows of at most 4 kWideThreads elements (a Llama-3-8B embedding of 4096),
// a block of kWideThreads, one float4 a thread: a decode step's norm is one row, one block,
// whose time is its threads' serial chain, and a 256-thread block's four steps a thread were
// most of it (4.7 us on an H200, twice a decode layer). The same results as add_rms_norm_q8 up
// to the order of the sum of squares. Not for WGSL (256 invocations a workgroup at most) nor the
// CPU target (a block's threads run one after another there: no chain to shorten); runtime/ops
// takes it where the loaded image has it.
QV_KERNEL QV_BLOCK(kWideThreads) QV_TARGETS(ptx, hsaco, spirv, msl) void add_rms_norm_q8_wide(
    const float* x, const float* residual, const float* w, float* sum, float* out, uint32_t* xq, float* xd,
    uint32_t rows, uint32_t cols, float eps) {
  qv::shared<float, kWideThreads> part;
  uint32_t row = qvops::block_row();
  if (row >= rows) return;   // uniform per block
  uint32_t base = row * cols, t = qv::thread_id_x(), c = 4 * t;
  uint32_t words = row * (cols / 4 + cols / 32);   // this row's quants, then its scales
  bool in = c < cols;   // cols % 32 == 0: a 32-element block's 8 threads are all in or all out
  qv::float4 zero(0.0f);
  qv::float4 s = in ? qv::load<4>(x + base + c) + qv::load<4>(residual + base + c) : zero;
  qv::float4 wv = in ? qv::load<4>(w + c) : zero;
  if (in) qv::store(sum + base + c, s);
  float inv_rms = qv::rsqrt(qv::block_sum(qvops::sum4(s * s)) / static_cast<float>(cols) + eps);
  qv::float4 o = s * inv_rms * wv;
  if (in) qv::store(out + base + c, o);
  float d = qvops::q8_quantize(part, t, o, in, xq, words + c / 4);
  if (in && t % 8 == 0) xd[words + cols / 4 + c / 32] = d;   // xd is xq's buffer: the row's scales follow its quants
}

// Short rows (kernels/common.h: cols <= 1024, rows starting on 16-byte boundaries), a subgroup
// each, kShortRows per block. Separate kernels so that their registers (a row per subgroup held
// in eight float4 slots) do not lower the occupancy of the block-per-row kernels: in one kernel
// with both paths, rms_norm bf16 32768 x 4096 fell from 0.99 to 0.81 of copy on the H100.
// runtime/ops launches them only for such rows.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void rms_norm_short(const T* x, const T* w, T* out, uint32_t rows, uint32_t cols,
                                                    float eps) {
  rms_norm_subgroup_rows(x, w, out, rows, cols, eps);
}
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void layer_norm_short(const T* x, const T* w, const T* b, T* out, uint32_t rows,
                                                      uint32_t cols, float eps) {
  layer_norm_subgroup_rows(x, w, b, out, rows, cols, eps);
}

template void rms_norm<float>(const float*, const float*, float*, uint32_t, uint32_t, float);
template void layer_norm<float>(const float*, const float*, const float*, float*, uint32_t, uint32_t, float);
template void add_rms_norm<float>(const float*, const float*, const float*, float*, float*, uint32_t, uint32_t,
                                  float);
template void rms_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, float);
template void layer_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t,
                                   float);
template void add_rms_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, qv::bf16*, uint32_t,
                                     uint32_t, float);
template void rms_norm<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, float);
template void layer_norm<qv::half>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t,
                                   float);
template void add_rms_norm<qv::half>(const qv::half*, const qv::half*, const qv::half*, qv::half*, qv::half*, uint32_t,
                                     uint32_t, float);
template void rms_norm_short<float>(const float*, const float*, float*, uint32_t, uint32_t, float);
template void layer_norm_short<float>(const float*, const float*, const float*, float*, uint32_t, uint32_t, float);
template void rms_norm_short<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, float);
template void layer_norm_short<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, float);
template void rms_norm_short<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, float);
template void layer_norm_short<qv::half>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, float);
