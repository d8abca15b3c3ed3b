// Row softmax and log_softmax, numerically stable: the row maximum is subtracted before exp, so
// no exp overflows and the largest term is exactly 1. One block per row, two passes over it: one
// that keeps a running maximum and the sum of exp(x - running max) (rescaled when the maximum
// grows; "online softmax", Milakov & Gimelshein 2018), one that writes. W = 4 elements per
// access when cols % 4 == 0 (see qvops::load_w). Rows of at most qvops::kCachedCols elements are
// instead read once into registers: maximum, then exp once per element, then the sum. The online
// pass costs a dependent exp and a branch per element; on the H100 it held softmax f32 at 77% of
// copy and bf16 (half the bytes, the same arithmetic) at 38%.
#include "common.h"

using qvops::kRowThreads;
using qvops::load_w;
using qvops::store_w;

namespace {

QV_DEVICE qv::float4 exp4(qv::float4 v) {
  using qvops::exp_by_exp2;
  return qv::float4(exp_by_exp2(v[0]), exp_by_exp2(v[1]), exp_by_exp2(v[2]), exp_by_exp2(v[3]));
}

// One element into a thread's running (max, sum of exp(x - max)).
QV_DEVICE void online_add(float v, float& m, float& s) {
  if (v > m) {
    s = s * qvops::exp_by_exp2(m - v) + 1.0f;
    m = v;
  } else {
    s += qvops::exp_by_exp2(v - m);
  }
}

// Row maximum and sum of exp(x - max) in one pass; every thread of the block gets both.
template <uint32_t W, typename T>
QV_DEVICE void row_max_and_sum(const T* x, uint32_t base, uint32_t cols, float& max_out, float& sum_out) {
  float m = qvops::kLowest, s = 0.0f;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
    qv::float4 v = load_w<W>(x + base + c);
    online_add(v[0], m, s);
    if constexpr (W == 4) {
      online_add(v[1], m, s);
      online_add(v[2], m, s);
      online_add(v[3], m, s);
    }
  }
  float row_max = qv::block_max(m);
  max_out = row_max;
  sum_out = qv::block_sum(s * qvops::exp_by_exp2(m - row_max));   // a thread without elements: 0 * 0
}

template <uint32_t W, typename T>
QV_DEVICE void softmax_row(const T* x, T* out, uint32_t base, uint32_t cols) {
  float m = 0.0f, s = 0.0f;
  row_max_and_sum<W>(x, base, cols, m, s);
  float inv_s = 1.0f / s;
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
    qv::float4 v = load_w<W>(x + base + c);
    store_w<W>(out + base + c, exp4(v - m) * inv_s);
  }
}

template <uint32_t W, typename T>
QV_DEVICE void log_softmax_row(const T* x, T* out, uint32_t base, uint32_t cols) {
  float m = 0.0f, s = 0.0f;
  row_max_and_sum<W>(x, base, cols, m, s);
  float shift = m + qv::log(s);
  for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W)
    store_w<W>(out + base + c, load_w<W>(x + base + c) - shift);
}

// The maximum of the row in registers ignores a NaN operand (a > b ? a : b, an ordered
// comparison): a row holding NaN still comes out NaN, through exp(NaN - m) in the sum (and
// m itself may be the NaN). On SPIR-V this is two instructions where qv::max, which must
// return NaN for a NaN operand, is five (GLSL FMax, two IsNan, two selects), once per element.
QV_DEVICE float max_ordered(float a, float b) { return a > b ? a : b; }
QV_DEVICE float max4(qv::float4 v) { return max_ordered(max_ordered(v[0], v[1]), max_ordered(v[2], v[3])); }

// The row in registers (qvops::row_load), the lowest float past the row's end: those lanes
// neither raise the maximum nor (exp(lowest - max) = 0) add to the sum.
template <bool LOG, typename T>
QV_DEVICE void softmax_row_cached(const T* x, T* out, uint32_t base, uint32_t cols) {
  qv::float4 v0, v1, v2, v3;
  qvops::row_load(x + base, cols, qvops::kLowest, v0, v1, v2, v3);
  float m = qv::block_max(max_ordered(max_ordered(max4(v0), max4(v1)), max_ordered(max4(v2), max4(v3))));
  v0 = v0 - m;
  v1 = v1 - m;
  v2 = v2 - m;
  v3 = v3 - m;
  qv::float4 e0 = exp4(v0), e1 = exp4(v1), e2 = exp4(v2), e3 = exp4(v3);
  float s = qv::block_sum((qvops::sum4(e0) + qvops::sum4(e1)) + (qvops::sum4(e2) + qvops::sum4(e3)));
  if constexpr (LOG) {
    float shift = qv::log(s);
    qvops::row_store(out + base, cols, v0 - shift, v1 - shift, v2 - shift, v3 - shift);
  } else {
    float inv_s = 1.0f / s;
    qvops::row_store(out + base, cols, e0 * inv_s, e1 * inv_s, e2 * inv_s, e3 * inv_s);
  }
}

// A short row that fits the subgroup's registers (qvops::short_row_fits): read once.
template <bool LOG, typename T>
QV_DEVICE void softmax_short_cached(const T* in, T* out, uint32_t cols, bool valid) {
  float l = qvops::kLowest;   // past the row's end: no effect on the maximum, exp(lowest - max) = 0
  qv::float4 v0(l), v1(l), v2(l), v3(l), v4(l), v5(l), v6(l), v7(l);
  if (valid) qvops::short_row_load(in, cols, l, v0, v1, v2, v3, v4, v5, v6, v7);
  float m = qv::subgroup_max(max_ordered(max_ordered(max_ordered(max4(v0), max4(v1)), max_ordered(max4(v2), max4(v3))),
                                        max_ordered(max_ordered(max4(v4), max4(v5)), max_ordered(max4(v6), max4(v7)))));
  v0 = v0 - m;
  v1 = v1 - m;
  v2 = v2 - m;
  v3 = v3 - m;
  v4 = v4 - m;
  v5 = v5 - m;
  v6 = v6 - m;
  v7 = v7 - m;
  qv::float4 e0 = exp4(v0), e1 = exp4(v1), e2 = exp4(v2), e3 = exp4(v3);
  qv::float4 e4 = exp4(v4), e5 = exp4(v5), e6 = exp4(v6), e7 = exp4(v7);
  using qvops::sum4;
  float s = qv::subgroup_sum(((sum4(e0) + sum4(e1)) + (sum4(e2) + sum4(e3))) +
                             ((sum4(e4) + sum4(e5)) + (sum4(e6) + sum4(e7))));
  if (valid) {
    if constexpr (LOG) {
      float shift = qv::log(s);
      qvops::short_row_store(out, cols, v0 - shift, v1 - shift, v2 - shift, v3 - shift, v4 - shift, v5 - shift,
                             v6 - shift, v7 - shift);
    } else {
      float inv_s = 1.0f / s;
      qvops::short_row_store(out, cols, e0 * inv_s, e1 * inv_s, e2 * inv_s, e3 * inv_s, e4 * inv_s, e5 * inv_s,
                             e6 * inv_s, e7 * inv_s);
    }
  }
}

// Short rows (kernels/common.h): a subgroup per row, two passes: one keeps each lane's running
// maximum and sum of exp(x - max), rescaled once per 16-byte chunk when the maximum grows (an
// exp per chunk, not per element as in online_add), then the lanes' pairs are combined; one
// writes. A separate maximum pass (three reads of the row) held softmax f32 4096 x 1024 at 0.85
// of Triton's fused softmax on the H100.
template <bool LOG, typename T>
QV_DEVICE void softmax_subgroup_rows(const T* x, T* out, uint32_t rows, uint32_t cols) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  for (uint32_t step = 0; step < qvops::short_row_steps(); ++step) {
    bool valid = false;
    uint32_t row = qvops::short_row(step, rows, valid);
    const T* in = x + row * cols;
    if (qvops::short_row_fits(cols)) {   // uniform: cols and the subgroup size
      softmax_short_cached<LOG>(in, out + row * cols, cols, valid);
      continue;
    }
    qv::float4 zero(0.0f);
    float m = qvops::kLowest, s = 0.0f;
    if (valid) {
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero;
        qvops::load16(in + c, lo, hi);
        float m_new = qv::max(m, qvops::chunk_max<T>(lo, hi));
        s = s * qvops::exp_by_exp2(m - m_new) + qvops::chunk_sum<T>(exp4(lo - m_new), exp4(hi - m_new));
        m = m_new;
      }
    }
    float row_max = qv::subgroup_max(m);
    s = qv::subgroup_sum(s * qvops::exp_by_exp2(m - row_max));   // a lane without elements: 0 * 0
    m = row_max;
    if (valid) {
      float shift = m + qv::log(s), inv_s = 1.0f / s;
      for (uint32_t c = lane * E; c < cols; c += sg * E) {
        qv::float4 lo, hi = zero;
        qvops::load16(in + c, lo, hi);
        if constexpr (LOG) qvops::store16(out + row * cols + c, lo - shift, hi - shift);
        else qvops::store16(out + row * cols + c, exp4(lo - m) * inv_s, exp4(hi - m) * inv_s);
      }
    }
  }
}

}  // namespace

// out[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r)
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void softmax(const T* x, T* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  if (qvops::row_cached<T>(cols)) softmax_row_cached<false>(x, out, row * cols, cols);
  else if (cols % 4 == 0) softmax_row<4>(x, out, row * cols, cols);
  else softmax_row<1>(x, out, row * cols, cols);
}

// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r))
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void log_softmax(const T* x, T* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  if (qvops::row_cached<T>(cols)) softmax_row_cached<true>(x, out, row * cols, cols);
  else if (cols % 4 == 0) log_softmax_row<4>(x, out, row * cols, cols);
  else log_softmax_row<1>(x, out, row * cols, cols);
}

// Short rows (kernels/common.h), a subgroup each: separate kernels (see norms.cpp's
// rms_norm_short); runtime/ops launches them only for such rows.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void softmax_short(const T* x, T* out, uint32_t rows, uint32_t cols) {
  softmax_subgroup_rows<false>(x, out, rows, cols);
}
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void log_softmax_short(const T* x, T* out, uint32_t rows, uint32_t cols) {
  softmax_subgroup_rows<true>(x, out, rows, cols);
}

template void softmax<float>(const float*, float*, uint32_t, uint32_t);
template void log_softmax<float>(const float*, float*, uint32_t, uint32_t);
template void softmax<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void log_softmax<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void softmax<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
template void log_softmax<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
template void softmax_short<float>(const float*, float*, uint32_t, uint32_t);
template void log_softmax_short<float>(const float*, float*, uint32_t, uint32_t);
template void softmax_short<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void log_softmax_short<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void softmax_short<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
template void log_softmax_short<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
