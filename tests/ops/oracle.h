// The fp64 host oracle of the numeric gate: every op computed in double from the exact values of
// its inputs, written from the ops' definitions (docs/ops.md), not from the kernels. Row-major
// throughout, shapes as in include/quiver/ops.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace oracle {

using Vec = std::vector<double>;

Vec rms_norm(const Vec& x, const Vec& w, size_t rows, size_t cols, double eps);
Vec layer_norm(const Vec& x, const Vec& w, const Vec& b, size_t rows, size_t cols, double eps);
// sum = round(x + residual) (round: to the element type, as the op stores it), out = rms_norm(sum).
void add_rms_norm(const Vec& x, const Vec& residual, const Vec& w, size_t rows, size_t cols, double eps,
                  const std::function<double(double)>& round, Vec& sum, Vec& out);
Vec softmax(const Vec& x, size_t rows, size_t cols);
Vec log_softmax(const Vec& x, size_t rows, size_t cols);
Vec silu_gate(const Vec& x, const Vec& g);
Vec gelu_erf(const Vec& x);
Vec gelu_tanh(const Vec& x);
// The angle is float(pos) * inv_freq[i] rounded to float: that product is part of the op's
// definition (as in the f32 rope of other frameworks); everything after it is fp64.
Vec rope(const Vec& x, const std::vector<int32_t>& pos, const std::vector<float>& inv_freq, size_t tokens,
         size_t heads, size_t head_dim, bool interleaved);
Vec embedding(const Vec& table, const std::vector<int32_t>& ids, size_t vocab, size_t dim);
// Per row the column of the largest value, the first of equal ones; a NaN ranks above every
// number (the first NaN's column); -0 and +0 are equal.
std::vector<int32_t> argmax(const Vec& x, size_t rows, size_t cols);
// The columns of each row's k largest elements, largest first; NaN above every number, -0 equal
// to +0, equal elements by increasing column (torch.topk's ranking with a stable order).
std::vector<int32_t> topk(const Vec& x, size_t rows, size_t cols, size_t k);
// Exact a + b and a * b (the op rounds them to float, then to the element type).
Vec add(const Vec& a, const Vec& b);
Vec mul(const Vec& a, const Vec& b);
// cache[b][position[b] + t] = src[b][t] (src: batch x tokens x heads x head_dim; cache:
// batch x heads x capacity x head_dim, or batch x capacity x heads x head_dim when bshd); a
// sequence at a negative position writes nothing, rows at position[b] + t >= capacity are skipped.
void kv_append(Vec& cache, const Vec& src, const std::vector<int32_t>& position, size_t batch, size_t tokens,
               size_t heads, size_t head_dim, size_t capacity, bool bshd);

// y = W x; `weight` receives sum_k |W[r, k] x[k]| per row (for the accumulation bound).
Vec matvec(const Vec& w, const Vec& x, size_t rows, size_t cols, Vec& weight);
// llama.cpp's block layouts, dequantised exactly: rows x cols values.
Vec dequantize_q8_0(const std::vector<uint8_t>& blocks, size_t rows, size_t cols);
Vec dequantize_q4_0(const std::vector<uint8_t>& blocks, size_t rows, size_t cols);
// The K-quants (256-element super-blocks). `magnitude` receives, per element, the sum of the
// magnitudes of the terms its value is made of: |d scale q| + |dmin min| for q4_k (whose two
// terms an implementation may sum separately), |w| for q6_k.
Vec dequantize_q4_k(const std::vector<uint8_t>& blocks, size_t rows, size_t cols, Vec& magnitude);
Vec dequantize_q6_k(const std::vector<uint8_t>& blocks, size_t rows, size_t cols, Vec& magnitude);
double f16_value(uint16_t bits);

// c = a b (b: k x n) or a b^T (b: n x k); `weight` receives sum_k |a b| per element.
Vec matmul(const Vec& a, const Vec& b, size_t m, size_t n, size_t k, bool b_transposed, Vec& weight);
// int8 x int8 with exact integer accumulation, then (float(acc) * a_scale[i]) * b_scale[j] in
// float arithmetic: the op's definition, reproduced bit for bit.
std::vector<float> matmul_w8a8(const std::vector<int8_t>& a, const std::vector<int8_t>& b,
                               const std::vector<float>& a_scale, const std::vector<float>& b_scale, size_t m,
                               size_t n, size_t k);

struct AttentionCase {
  size_t batch, q_heads, kv_heads, q_len, kv_len, kv_capacity, head_dim;
  bool bshd, causal;
  double scale;
};
struct AttentionRef {
  Vec o;                       // in q's layout
  double score_weight = 0;     // max over (query, key) of sum_d |scale q_d k_d|: the scores' condition
  double max_abs_score = 0;    // max |scale q . k|
  double max_abs_v = 0;
};
AttentionRef attention(const Vec& q, const Vec& k, const Vec& v, const AttentionCase& c);

}  // namespace oracle
