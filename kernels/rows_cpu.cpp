// f32 row kernels for the CPU target (QV_TARGETS(cpu)), a block of one thread each: loops of
// 16 elements a step as two 8-float vectors, which LLVM turns into 8-wide vector code (the scalar
// element operations of an 8-float vector become one vector operation through its SLP
// vectoriser, as in matmul_cpu.cpp).
//   softmax_cpu / log_softmax_cpu: a row each, three passes over it (maximum, exponentials and
//     their sum, scaling). The portable kernels (softmax.cpp) give a row to 256 threads that a
//     CPU runs one after another between the block reductions' barriers, each thread's
//     exponentials 4 wide. A 4096-float row is 16 KB: the later passes read it from L1.
//   rms_norm_cpu / add_rms_norm_cpu: a row each, two passes (the sum of squares, then the
//     scaling; add_rms_norm writes the sum x + residual in the first). The portable kernels give a
//     row to a block of 256 threads, or a short row to a subgroup, whose lanes each walk a strided
//     share of it: on the CPU a row of 1024 floats then ran as 16 scalar lanes.
//   matvec_cpu: kCpuMatvecRows rows of w each, x's 16 elements of a step loaded once for all of
//     them; the rows stream from memory side by side (four prefetched streams a core).
// Rows need not start on 32-byte boundaries: vectors go through qvops::load8 / store8 (element
// accesses, one unaligned vector access after vectorisation), never qv::load<8>.
#include "common.h"

using qvops::F8;
using qvops::kCpuMatvecRows;
using qvops::fma8;
using qvops::load8;
using qvops::store8;
using qvops::sum8;


namespace {

// a > b ? a : b per element (x86's maxps): a NaN in x never raises the maximum, and the row still
// comes out NaN through exp(NaN - m) in the sum, as in the portable kernels.
QV_DEVICE float max_ordered(float a, float b) { return a > b ? a : b; }
QV_DEVICE F8 max8(F8 a, F8 b) {
  return F8(max_ordered(a[0], b[0]), max_ordered(a[1], b[1]), max_ordered(a[2], b[2]), max_ordered(a[3], b[3]),
            max_ordered(a[4], b[4]), max_ordered(a[5], b[5]), max_ordered(a[6], b[6]), max_ordered(a[7], b[7]));
}
QV_DEVICE F8 exp8(F8 v) {
  using qvops::exp_by_exp2;
  return F8(exp_by_exp2(v[0]), exp_by_exp2(v[1]), exp_by_exp2(v[2]), exp_by_exp2(v[3]), exp_by_exp2(v[4]),
            exp_by_exp2(v[5]), exp_by_exp2(v[6]), exp_by_exp2(v[7]));
}
QV_DEVICE float hmax8(F8 v) {
  return max_ordered(max_ordered(max_ordered(v[0], v[1]), max_ordered(v[2], v[3])),
                     max_ordered(max_ordered(v[4], v[5]), max_ordered(v[6], v[7])));
}

// The row's maximum, and the sum of exp(x - max) (LOG: nothing written) or those exponentials
// written to out (softmax, scaled afterwards).
template <bool LOG>
QV_DEVICE void row_stats(const float* in, float* out, uint32_t cols, float& max_out, float& sum_out) {
  uint32_t body = cols - cols % 16;
  F8 m0(qvops::kLowest), m1(qvops::kLowest);
  for (uint32_t c = 0; c < body; c += 16) {
    m0 = max8(m0, load8(in + c));
    m1 = max8(m1, load8(in + c + 8));
  }
  float m = hmax8(max8(m0, m1));
  for (uint32_t c = body; c < cols; ++c) m = max_ordered(m, in[c]);
  F8 mv(m), s0(0.0f), s1(0.0f);
  for (uint32_t c = 0; c < body; c += 16) {
    F8 e0 = exp8(load8(in + c) - mv), e1 = exp8(load8(in + c + 8) - mv);
    if constexpr (!LOG) {
      store8(out + c, e0);
      store8(out + c + 8, e1);
    }
    s0 = s0 + e0;
    s1 = s1 + e1;
  }
  float s = sum8(s0 + s1);
  for (uint32_t c = body; c < cols; ++c) {
    float e = qvops::exp_by_exp2(in[c] - m);
    if constexpr (!LOG) out[c] = e;
    s += e;
  }
  max_out = m;
  sum_out = s;
}

// The row's last pass: out = exp(x - max) / sum (softmax: the exponentials already in out), or
// out = x - (max + log(sum)) (LOG).
template <bool LOG>
QV_DEVICE void softmax_row(const float* x, float* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  const float* in = x + row * cols;
  float* o = out + row * cols;
  float m = 0.0f, s = 0.0f;
  row_stats<LOG>(in, o, cols, m, s);
  float k = LOG ? m + qv::log(s) : 1.0f / s;
  F8 kv(k);
  uint32_t body = cols - cols % 16;
  for (uint32_t c = 0; c < body; c += 16) {
    if constexpr (LOG) {
      store8(o + c, load8(in + c) - kv);
      store8(o + c + 8, load8(in + c + 8) - kv);
    } else {
      store8(o + c, load8(o + c) * kv);
      store8(o + c + 8, load8(o + c + 8) * kv);
    }
  }
  for (uint32_t c = body; c < cols; ++c) {
    if constexpr (LOG) o[c] = in[c] - k;
    else o[c] = o[c] * k;
  }
}

// out = in * k * w over a row of `cols` (in and out at their row's start).
QV_DEVICE void scale_row(const float* in, const float* w, float* out, uint32_t cols, float k) {
  uint32_t body = cols - cols % 16;
  F8 kv(k);
  for (uint32_t c = 0; c < body; c += 16) {
    store8(out + c, load8(in + c) * kv * load8(w + c));
    store8(out + c + 8, load8(in + c + 8) * kv * load8(w + c + 8));
  }
  for (uint32_t c = body; c < cols; ++c) out[c] = in[c] * k * w[c];
}

// out = in * w / sqrt(mean(in^2) + eps) for the block's row; with RES, in = x + residual,
// written to sum in the first pass and read back (from L1) in the second.
template <bool RES>
QV_DEVICE void rms_norm_row(const float* x, const float* residual, const float* w, float* sum, float* out,
                            uint32_t rows, uint32_t cols, float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  uint32_t body = cols - cols % 16;
  F8 q0(0.0f), q1(0.0f);
  for (uint32_t c = 0; c < body; c += 16) {
    F8 a = load8(x + base + c), b = load8(x + base + c + 8);
    if constexpr (RES) {
      a = a + load8(residual + base + c);
      b = b + load8(residual + base + c + 8);
      store8(sum + base + c, a);
      store8(sum + base + c + 8, b);
    }
    q0 = q0 + a * a;
    q1 = q1 + b * b;
  }
  float squares = sum8(q0 + q1);
  for (uint32_t c = body; c < cols; ++c) {
    float v = x[base + c];
    if constexpr (RES) {
      v = v + residual[base + c];
      sum[base + c] = v;
    }
    squares += v * v;
  }
  float inv_rms = qv::rsqrt(squares / static_cast<float>(cols) + eps);
  if constexpr (RES) scale_row(sum + base, w, out + base, cols, inv_rms);
  else scale_row(x + base, w, out + base, cols, inv_rms);
}

}  // namespace

// out[r, c] = x[r, c] * w[c] / sqrt(mean_c(x[r, c]^2) + eps)
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void rms_norm_cpu(const float* x, const float* w, float* out, uint32_t rows,
                                                        uint32_t cols, float eps) {
  rms_norm_row<false>(x, x, w, out, out, rows, cols, eps);
}

// sum = x + residual, out = rms_norm(sum) * w
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void add_rms_norm_cpu(const float* x, const float* residual, const float* w,
                                                            float* sum, float* out, uint32_t rows, uint32_t cols,
                                                            float eps) {
  rms_norm_row<true>(x, residual, w, sum, out, rows, cols, eps);
}

// out[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r)
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void softmax_cpu(const float* x, float* out, uint32_t rows, uint32_t cols) {
  softmax_row<false>(x, out, rows, cols);
}

// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r))
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void log_softmax_cpu(const float* x, float* out, uint32_t rows, uint32_t cols) {
  softmax_row<true>(x, out, rows, cols);
}

// y[r] = sum_c w[r, c] x[c] for the block's kCpuMatvecRows rows (those below rows).
QV_KERNEL QV_BLOCK(1) QV_TARGETS(cpu) void matvec_cpu(const float* w, const float* x, float* y, uint32_t rows,
                                                      uint32_t cols) {
  uint32_t r0 = qvops::block_row() * kCpuMatvecRows;
  if (r0 >= rows) return;
  // Rows past the matrix re-read its last row (their sums are not stored): no branch in the loop.
  uint32_t last = rows - 1;
  const float* w0 = w + r0 * cols;
  const float* w1 = w + qv::min(r0 + 1, last) * cols;
  const float* w2 = w + qv::min(r0 + 2, last) * cols;
  const float* w3 = w + qv::min(r0 + 3, last) * cols;
  F8 z(0.0f);
  F8 a0 = z, b0 = z, a1 = z, b1 = z, a2 = z, b2 = z, a3 = z, b3 = z;
  uint32_t body = cols - cols % 16;
  for (uint32_t c = 0; c < body; c += 16) {
    F8 xl = load8(x + c), xh = load8(x + c + 8);
    a0 = fma8(load8(w0 + c), xl, a0), b0 = fma8(load8(w0 + c + 8), xh, b0);
    a1 = fma8(load8(w1 + c), xl, a1), b1 = fma8(load8(w1 + c + 8), xh, b1);
    a2 = fma8(load8(w2 + c), xl, a2), b2 = fma8(load8(w2 + c + 8), xh, b2);
    a3 = fma8(load8(w3 + c), xl, a3), b3 = fma8(load8(w3 + c + 8), xh, b3);
  }
  float s0 = sum8(a0 + b0), s1 = sum8(a1 + b1), s2 = sum8(a2 + b2), s3 = sum8(a3 + b3);
  for (uint32_t c = body; c < cols; ++c) {
    s0 = qv::fma(w0[c], x[c], s0);
    s1 = qv::fma(w1[c], x[c], s1);
    s2 = qv::fma(w2[c], x[c], s2);
    s3 = qv::fma(w3[c], x[c], s3);
  }
  y[r0] = s0;
  if (r0 + 1 < rows) y[r0 + 1] = s1;
  if (r0 + 2 < rows) y[r0 + 2] = s2;
  if (r0 + 3 < rows) y[r0 + 3] = s3;
}
