// fp64 reference implementations of the op library (oracle.h).
#include "oracle.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace oracle {

Vec rms_norm(const Vec& x, const Vec& w, size_t rows, size_t cols, double eps) {
  Vec out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double ss = 0;
    for (size_t c = 0; c < cols; ++c) ss += xr[c] * xr[c];
    double inv = 1.0 / std::sqrt(ss / double(cols) + eps);
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = xr[c] * inv * w[c];
  }
  return out;
}

Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, size_t rows, size_t cols, double eps) {
  Vec out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double mean = 0;
    for (size_t c = 0; c < cols; ++c) mean += xr[c];
    mean /= double(cols);
    double var = 0;
    for (size_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= double(cols);
    double inv = 1.0 / std::sqrt(var + eps);
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = (xr[c] - mean) * inv * w[c] + b[c];
  }
  return out;
}

void add_rms_norm(const Vec& x, const Vec& residual, const Vec& w, size_t rows, size_t cols, double eps,
                  const std::function<double(double)>& round, Vec& sum, Vec& out) {
  sum.resize(rows * cols);
  for (size_t i = 0; i < rows * cols; ++i) sum[i] = round(x[i] + residual[i]);
  out = rms_norm(sum, w, rows, cols, eps);
}

namespace {
// max and log(sum exp(x - max)) of one row
void row_stats(const double* x, size_t cols, double& max, double& log_sum) {
  max = -INFINITY;
  for (size_t c = 0; c < cols; ++c) max = std::max(max, x[c]);
  double s = 0;
  for (size_t c = 0; c < cols; ++c) s += std::exp(x[c] - max);
  log_sum = std::log(s);
}
}  // namespace

Vec softmax(const Vec& x, size_t rows, size_t cols) {
  Vec out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    double m, ls;
    row_stats(&x[r * cols], cols, m, ls);
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = std::exp(x[r * cols + c] - m - ls);
  }
  return out;
}

Vec log_softmax(const Vec& x, size_t rows, size_t cols) {
  Vec out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    double m, ls;
    row_stats(&x[r * cols], cols, m, ls);
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = x[r * cols + c] - m - ls;
  }
  return out;
}

Vec silu_gate(const Vec& x, const Vec& g) {
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] / (1.0 + std::exp(-x[i])) * g[i];
  return out;
}

Vec gelu_erf(const Vec& x) {
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
  return out;
}

Vec gelu_tanh(const Vec& x) {
  const double k = std::sqrt(2.0 / M_PI);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = 0.5 * x[i] * (1.0 + std::tanh(k * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
  return out;
}

Vec rope(const Vec& x, const std::vector<int32_t>& pos, const std::vector<float>& inv_freq, size_t tokens,
         size_t heads, size_t head_dim, bool interleaved) {
  Vec out(x);   // dimensions past the rotary ones stay as they are
  const size_t rot_half = inv_freq.size();
  for (size_t t = 0; t < tokens; ++t) {
    for (size_t h = 0; h < heads; ++h) {
      const size_t base = (t * heads + h) * head_dim;
      for (size_t i = 0; i < rot_half; ++i) {
        const float angle_f32 = static_cast<float>(pos[t]) * inv_freq[i];
        const double angle = angle_f32, c = std::cos(angle), s = std::sin(angle);
        const size_t a = interleaved ? base + 2 * i : base + i;
        const size_t b = interleaved ? base + 2 * i + 1 : base + i + rot_half;
        out[a] = x[a] * c - x[b] * s;
        out[b] = x[b] * c + x[a] * s;
      }
    }
  }
  return out;
}

Vec embedding(const Vec& table, const std::vector<int32_t>& ids, size_t vocab, size_t dim) {
  Vec out(ids.size() * dim, 0.0);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || size_t(ids[t]) >= vocab) continue;
    for (size_t d = 0; d < dim; ++d) out[t * dim + d] = table[size_t(ids[t]) * dim + d];
  }
  return out;
}

std::vector<int32_t> argmax(const Vec& x, size_t rows, size_t cols) {
  std::vector<int32_t> out(rows);
  for (size_t r = 0; r < rows; ++r) {
    const double* row = &x[r * cols];
    size_t best = 0;
    for (size_t c = 0; c < cols; ++c) {
      if (std::isnan(row[c])) {
        best = c;
        break;
      }
      if (row[c] > row[best]) best = c;
    }
    out[r] = int32_t(best);
  }
  return out;
}

std::vector<int32_t> topk(const Vec& x, size_t rows, size_t cols, size_t k) {
  std::vector<int32_t> out;
  for (size_t r = 0; r < rows; ++r) {
    const double* row = &x[r * cols];
    std::vector<size_t> order(cols);
    for (size_t c = 0; c < cols; ++c) order[c] = c;
    // NaN ranks first; otherwise by value (-0 == +0 under ==); stable: equal ranks keep column order.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (std::isnan(row[a]) || std::isnan(row[b])) return std::isnan(row[a]) && !std::isnan(row[b]);
      return row[a] > row[b];
    });
    for (size_t i = 0; i < k; ++i) out.push_back(int32_t(order[i]));
  }
  return out;
}

Vec add(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

Vec mul(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] * b[i];
  return out;
}

void kv_append(Vec& cache, const Vec& src, const std::vector<int32_t>& position, size_t batch, size_t tokens,
               size_t heads, size_t head_dim, size_t capacity, bool bshd) {
  for (size_t b = 0; b < batch; ++b)
    for (size_t t = 0; t < tokens; ++t) {
      int64_t p = int64_t(position[b]) + int64_t(t);
      if (position[b] < 0 || p >= int64_t(capacity)) continue;
      for (size_t h = 0; h < heads; ++h)
        for (size_t d = 0; d < head_dim; ++d) {
          size_t to = bshd ? ((b * capacity + size_t(p)) * heads + h) * head_dim + d
                           : ((b * heads + h) * capacity + size_t(p)) * head_dim + d;
          cache[to] = src[((b * tokens + t) * heads + h) * head_dim + d];
        }
    }
}

Vec matvec(const Vec& w, const Vec& x, size_t rows, size_t cols, Vec& weight) {
  Vec y(rows);
  weight.assign(rows, 0);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0, a = 0;
    for (size_t c = 0; c < cols; ++c) {
      s += w[r * cols + c] * x[c];
      a += std::fabs(w[r * cols + c] * x[c]);
    }
    y[r] = s;
    weight[r] = a;
  }
  return y;
}

double f16_value(uint16_t bits) {
  const int e = (bits >> 10) & 31, f = bits & 1023;
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  if (e == 31) return f ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(f, -24);
  return sign * std::ldexp(1024 + f, e - 25);
}

Vec dequantize_q8_0(const std::vector<uint8_t>& blocks, size_t rows, size_t cols) {
  // block: uint16 d (little-endian f16), int8 qs[32]; value j = d * qs[j]
  Vec w(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t blk = 0; blk < cols / 32; ++blk) {
      const uint8_t* p = &blocks[(r * (cols / 32) + blk) * 34];
      const double d = f16_value(uint16_t(p[0] | (p[1] << 8)));
      for (size_t j = 0; j < 32; ++j) w[r * cols + blk * 32 + j] = d * double(int8_t(p[2 + j]));
    }
  }
  return w;
}

Vec dequantize_q4_0(const std::vector<uint8_t>& blocks, size_t rows, size_t cols) {
  // block: uint16 d, uint8 qs[16]; value j = d * ((qs[j] & 15) - 8), value j + 16 = d * ((qs[j] >> 4) - 8)
  Vec w(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t blk = 0; blk < cols / 32; ++blk) {
      const uint8_t* p = &blocks[(r * (cols / 32) + blk) * 18];
      const double d = f16_value(uint16_t(p[0] | (p[1] << 8)));
      double* out = &w[r * cols + blk * 32];
      for (size_t j = 0; j < 16; ++j) {
        out[j] = d * double(int(p[2 + j] & 15) - 8);
        out[j + 16] = d * double(int(p[2 + j] >> 4) - 8);
      }
    }
  }
  return w;
}

namespace {
// Calls f(the block's bytes, the index of its first element in the rows x cols output) for every
// block of `elems` elements and `bytes` bytes, rows of cols / elems blocks.
template <typename F>
void for_each_block(const std::vector<uint8_t>& blocks, size_t rows, size_t cols, size_t elems, size_t bytes, F&& f) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t blk = 0; blk < cols / elems; ++blk) f(&blocks[(r * (cols / elems) + blk) * bytes], r * cols + blk * elems);
}
}  // namespace

Vec dequantize_q4_k(const std::vector<uint8_t>& blocks, size_t rows, size_t cols, Vec& magnitude) {
  // super-block: uint16 d, uint16 dmin, uint8 scales[12], uint8 qs[128]. Sub-block s (elements
  // 32s .. 32s + 31) has a 6-bit scale and min: for s < 4 the low 6 bits of scales[s] and
  // scales[s + 4]; for s >= 4 the low / high nibble of scales[s + 4] with the top 2 bits of
  // scales[s - 4] / scales[s] above it. Element 32s + i is nibble (s odd: high, s even: low) of
  // qs[32 (s / 2) + i]; value d * scale * q - dmin * min.
  Vec w(rows * cols);
  magnitude.assign(rows * cols, 0);
  for_each_block(blocks, rows, cols, 256, 144, [&](const uint8_t* p, size_t first) {
    const double d = f16_value(uint16_t(p[0] | (p[1] << 8))), dmin = f16_value(uint16_t(p[2] | (p[3] << 8)));
    const uint8_t* sc = p + 4;
    const uint8_t* qs = p + 16;
    for (size_t s = 0; s < 8; ++s) {
      int scale = s < 4 ? sc[s] & 63 : (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
      int min = s < 4 ? sc[s + 4] & 63 : (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
      for (size_t i = 0; i < 32; ++i) {
        int q = s % 2 == 0 ? qs[32 * (s / 2) + i] & 15 : qs[32 * (s / 2) + i] >> 4;
        w[first + 32 * s + i] = d * scale * q - dmin * min;
        magnitude[first + 32 * s + i] = std::fabs(d * scale * q) + std::fabs(dmin * min);
      }
    }
  });
  return w;
}

Vec dequantize_q6_k(const std::vector<uint8_t>& blocks, size_t rows, size_t cols, Vec& magnitude) {
  // super-block: uint8 ql[128], uint8 qh[64], int8 scales[16], uint16 d. Element e = 128 h + 32 k
  // + l (h < 2, k < 4, l < 32): q = (nibble k / 2 of ql[64 h + 32 (k % 2) + l]) | (bits 2k, 2k + 1
  // of qh[32 h + l]) << 4; value d * scales[e / 16] * (q - 32).
  Vec w(rows * cols);
  magnitude.assign(rows * cols, 0);
  for_each_block(blocks, rows, cols, 256, 210, [&](const uint8_t* p, size_t first) {
    const double d = f16_value(uint16_t(p[208] | (p[209] << 8)));
    for (size_t e = 0; e < 256; ++e) {
      size_t h = e / 128, k = (e % 128) / 32, l = e % 32;
      uint8_t lo = p[64 * h + 32 * (k % 2) + l];
      int q = ((k < 2 ? lo & 15 : lo >> 4) | (((p[128 + 32 * h + l] >> (2 * k)) & 3) << 4)) - 32;
      w[first + e] = d * double(int8_t(p[192 + e / 16])) * q;
      magnitude[first + e] = std::fabs(w[first + e]);
    }
  });
  return w;
}

Vec matmul(const Vec& a, const Vec& b, size_t m, size_t n, size_t k, bool b_transposed, Vec& weight) {
  Vec c(m * n);
  weight.assign(m * n, 0);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double s = 0, w = 0;
      for (size_t p = 0; p < k; ++p) {
        double prod = a[i * k + p] * (b_transposed ? b[j * k + p] : b[p * n + j]);
        s += prod;
        w += std::fabs(prod);
      }
      c[i * n + j] = s;
      weight[i * n + j] = w;
    }
  }
  return c;
}

std::vector<float> matmul_w8a8(const std::vector<int8_t>& a, const std::vector<int8_t>& b,
                               const std::vector<float>& a_scale, const std::vector<float>& b_scale, size_t m,
                               size_t n, size_t k) {
  std::vector<float> c(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (size_t p = 0; p < k; ++p) acc += int64_t(a[i * k + p]) * int64_t(b[j * k + p]);
      volatile float scaled = static_cast<float>(acc) * a_scale[i];   // volatile: one float rounding per step
      c[i * n + j] = scaled * b_scale[j];
    }
  }
  return c;
}

AttentionRef attention(const Vec& q, const Vec& k, const Vec& v, const AttentionCase& c) {
  const size_t d = c.head_dim, group = c.q_heads / c.kv_heads;
  auto q_at = [&](size_t b, size_t h, size_t i) {
    return c.bshd ? ((b * c.q_len + i) * c.q_heads + h) * d : ((b * c.q_heads + h) * c.q_len + i) * d;
  };
  auto kv_at = [&](size_t b, size_t g, size_t j) {
    return c.bshd ? ((b * c.kv_capacity + j) * c.kv_heads + g) * d : ((b * c.kv_heads + g) * c.kv_capacity + j) * d;
  };
  AttentionRef r;
  r.o.assign(c.batch * c.q_heads * c.q_len * d, 0.0);
  Vec scores(c.kv_len);
  for (size_t b = 0; b < c.batch; ++b) {
    for (size_t h = 0; h < c.q_heads; ++h) {
      const size_t g = h / group;
      for (size_t i = 0; i < c.q_len; ++i) {
        const double* qi = &q[q_at(b, h, i)];
        // Visible keys: all, or (causal) those at or before the query's absolute position.
        const size_t visible = c.causal ? c.kv_len - c.q_len + i + 1 : c.kv_len;
        double max = -INFINITY;
        for (size_t j = 0; j < visible; ++j) {
          const double* kj = &k[kv_at(b, g, j)];
          double s = 0, w = 0;
          for (size_t e = 0; e < d; ++e) {
            s += qi[e] * kj[e];
            w += std::fabs(qi[e] * kj[e]);
          }
          scores[j] = s * c.scale;
          r.score_weight = std::max(r.score_weight, w * c.scale);
          r.max_abs_score = std::max(r.max_abs_score, std::fabs(scores[j]));
          max = std::max(max, scores[j]);
        }
        double denom = 0;
        for (size_t j = 0; j < visible; ++j) denom += std::exp(scores[j] - max);
        double* oi = &r.o[q_at(b, h, i)];
        for (size_t j = 0; j < visible; ++j) {
          const double p = std::exp(scores[j] - max) / denom;
          const double* vj = &v[kv_at(b, g, j)];
          for (size_t e = 0; e < d; ++e) oi[e] += p * vj[e];
        }
      }
    }
  }
  for (size_t b = 0; b < c.batch; ++b)   // the positions attended to, not the spare capacity
    for (size_t g = 0; g < c.kv_heads; ++g)
      for (size_t j = 0; j < c.kv_len; ++j)
        for (size_t e = 0; e < d; ++e) r.max_abs_v = std::max(r.max_abs_v, std::fabs(v[kv_at(b, g, j) + e]));
  return r;
}

}  // namespace oracle
