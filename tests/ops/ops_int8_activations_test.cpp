// int8 activations (docs/ops.md, docs/numerics.md "int8 activations"): quantize_activations_q8
// and add_rms_norm_q8 against the rounding's definition, and matvec_q4_0r_a8 / q8_0r_a8 /
// q4_k_a8 / q6_kr_a8 against the fp64 oracle on the GGUF blocks and the device's quantized
// activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "attention_bound.h"
#include "gate.h"
#include "oracle.h"

namespace {

using gate::gamma;
using gate::kU32;
using gate::Output;
using oracle::Vec;
namespace ops = quiver::ops;

quiver::Device& dev() { return gate::device(); }

struct Shape {
  size_t rows, cols;
};

// Floats in blocks of 32 of several magnitudes (2^-12 .. 2^12), a tenth of the blocks all zero.
std::vector<float> blocky_values(size_t n) {
  std::vector<float> v(n);
  std::uniform_real_distribution<double> unit(-1, 1), magnitude(-12, 12);
  std::bernoulli_distribution zero_block(0.1);
  for (size_t b = 0; b < n / 32; ++b) {
    double scale = zero_block(gate::rng()) ? 0 : std::exp2(magnitude(gate::rng()));
    for (size_t i = 0; i < 32; ++i) v[32 * b + i] = float(scale * unit(gate::rng()));
  }
  return v;
}

// The int8 activations xq (n quants, then n / 32 float d) of the floats x against their
// definition: d = max|x| / 127 but for a division's rounding (2.5 ulp on Vulkan), |q - x / d| <=
// 1/2 but for 127 / max|x| and x (127 / max|x|) rounding (a few ulp of 127). Records both under
// `op`; returns d q, what the products read.
Vec check_int8_activations(const char* op, const std::string& shape, const std::vector<float>& x,
                           const uint8_t* xq) {
  const size_t n = x.size();
  double d_err = 0, q_err = 0;
  Vec dq(n);
  for (size_t b = 0; b < n / 32; ++b) {
    float d;
    std::memcpy(&d, xq + n + 4 * b, 4);
    double amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::abs(double(x[32 * b + i])));
    const double d_ref = amax / 127;
    d_err = std::max(d_err, amax == 0 ? (d == 0 ? 0.0 : INFINITY) : std::abs(d - d_ref) / d_ref);
    if (std::isnan(d)) d_err = INFINITY;
    for (size_t i = 0; i < 32; ++i) {
      const int q = int8_t(xq[32 * b + i]);
      const double e = amax == 0 ? (q == 0 ? 0.0 : INFINITY) : std::max(0.0, std::abs(q - x[32 * b + i] / d_ref) - 0.5);
      q_err = std::max(q_err, q < -127 ? INFINITY : e);
      dq[32 * b + i] = double(d) * q;
    }
  }
  gate::record({op, "f32", shape, "d relative", d_err, 3 * kU32});
  gate::record({op, "f32", shape, "|q - x/d| - 1/2", q_err, 1e-4});
  return dq;
}

// quantize_activations_q8, then matvec_q4_0r_a8 / q8_0r_a8 on those quants: the integer block
// sums are exact, so the error is the float scaling's and the float sum's.
void check_matvec_a8(bool q4, Shape s) {
  std::vector<uint8_t> blocks = gate::random_blocks(s.rows, s.cols, 32, q4 ? 18 : 34, {0});
  std::vector<float> xh = blocky_values(s.cols);
  auto bx = gate::upload(xh);
  Output<uint8_t> xq(ops::activation_q8_bytes(s.cols));
  ops::quantize_activations_q8(dev(), bx, xq.buffer, s.cols);
  std::vector<uint8_t> xqh = xq.raw();
  Vec dq = check_int8_activations("quantize_activations_q8", gate::shape_string({s.cols}), xh, xqh.data());
  Output<float> y(s.rows);
  auto bw = gate::upload(q4 ? ops::repack_q4_0(blocks, s.rows, s.cols) : ops::repack_q8_0(blocks, s.rows, s.cols));
  (q4 ? ops::matvec_q4_0r_a8 : ops::matvec_q8_0r_a8)(dev(), bw, xq.buffer, y.buffer, s.rows, s.cols);
  Vec w = q4 ? oracle::dequantize_q4_0(blocks, s.rows, s.cols) : oracle::dequantize_q8_0(blocks, s.rows, s.cols);
  Vec weight, ref = oracle::matvec(w, dq, s.rows, s.cols, weight);
  for (double& v : weight) v = std::max(v, 0x1p-126);   // an all-zero x: the error must be ~0 absolutely
  gate::record({q4 ? "matvec_q4_0r_a8" : "matvec_q8_0r_a8", "int8 x", gate::shape_string({s.rows, s.cols}),
                "dot-weighted", gate::weighted_error(y.read(), ref, weight), gamma(s.cols)});
}

// matvec_q4_k_a8 (the GGUF blocks) and matvec_q6_kr_a8 (ops::repack_q6_k of them) on the device's
// int8 activations, against the fp64 oracle on the GGUF blocks and those activations. A weight is
// up to two exact float products (d scale q and dmin min; d scale and q - 32) and the integer
// sums are exact, so the float sums of 2 cols terms bound the error, relative to the sum of the
// weights' magnitudes times |d q| (the oracle's magnitude: an implementation may sum q4_k's two
// terms apart).
void check_matvec_k_a8(bool q6, Shape s) {
  std::vector<uint8_t> blocks = q6 ? gate::random_blocks(s.rows, s.cols, 256, 210, {208})
                                   : gate::random_blocks(s.rows, s.cols, 256, 144, {0, 2});
  std::vector<float> xh = blocky_values(s.cols);
  Output<uint8_t> xq(ops::activation_q8_bytes(s.cols));
  ops::quantize_activations_q8(dev(), gate::upload(xh), xq.buffer, s.cols);
  std::vector<uint8_t> xqh = xq.raw();
  Vec dq = check_int8_activations("quantize_activations_q8", gate::shape_string({s.cols}), xh, xqh.data());
  Output<float> y(s.rows);
  if (q6) ops::matvec_q6_kr_a8(dev(), gate::upload(ops::repack_q6_k(blocks, s.rows, s.cols)), xq.buffer, y.buffer, s.rows, s.cols);
  else ops::matvec_q4_k_a8(dev(), gate::upload(blocks), xq.buffer, y.buffer, s.rows, s.cols);
  Vec magnitude, weight;
  Vec w = q6 ? oracle::dequantize_q6_k(blocks, s.rows, s.cols, magnitude)
             : oracle::dequantize_q4_k(blocks, s.rows, s.cols, magnitude);
  Vec ref = oracle::matvec(w, dq, s.rows, s.cols, weight);
  oracle::matvec(magnitude, dq, s.rows, s.cols, weight);   // weight: sum_k magnitude |d q|
  for (double& v : weight) v = std::max(v, 0x1p-126);
  gate::record({q6 ? "matvec_q6_kr_a8" : "matvec_q4_k_a8", "int8 x", gate::shape_string({s.rows, s.cols}),
                "dot-weighted", gate::weighted_error(y.read(), ref, weight), gamma(2 * s.cols)});
}

// attention_decode_q8: o against the fp64 oracle (each sequence alone over its visible keys, the
// gate's decode bound) and bit for bit as attention_decode writes it, and each batch row's int8
// activations against the definition and byte for byte against quantize_activations_q8 of the
// row. Two sequences at different positions over several key chunks, grouped query heads,
// head_dim 64 and 128.
TEST(OpsGate, AttentionDecodeInt8Activations) {
  for (size_t d : {64, 128}) {
    const size_t batch = 2, q_heads = 8, kv_heads = 2, capacity = 200;
    const ops::KvCacheShape cache{batch, kv_heads, d, capacity, ops::AttentionLayout::BSHD};
    const std::vector<int32_t> positions{150, 37};
    Vec qd, kd, vd;
    auto q = gate::upload(gate::random_values<float>(batch * q_heads * d, -2, 2, qd));
    auto k = gate::upload(gate::random_values<float>(batch * kv_heads * capacity * d, -2, 2, kd));
    auto v = gate::upload(gate::random_values<float>(batch * kv_heads * capacity * d, -2, 2, vd));
    auto position = gate::upload(positions);
    auto work = gate::poisoned<float>(ops::attention_decode_workspace(q_heads, cache));
    const size_t e = q_heads * d, row_bytes = ops::activation_q8_bytes(e);
    Output<float> plain(batch * e), o(batch * e);
    Output<uint8_t> oq(batch * row_bytes);
    ops::attention_decode(dev(), q, k, v, position, plain.buffer, work, q_heads, cache);
    ops::attention_decode_q8(dev(), q, k, v, position, o.buffer, oq.buffer, work, q_heads, cache);
    std::vector<float> plain_h = plain.raw(), oh = o.raw();
    std::vector<uint8_t> oqh = oq.raw();
    const std::string shape = gate::shape_string({batch, q_heads, d});
    EXPECT_EQ(0, std::memcmp(plain_h.data(), oh.data(), oh.size() * sizeof(float)))
        << shape << ": attention_decode_q8's o differs from attention_decode's";
    for (size_t b = 0; b < batch; ++b) {
      // Sequence b alone, as the oracle takes it: BHSD over its position + 1 visible keys.
      const size_t n = size_t(positions[b]) + 1;
      Vec qb(qd.begin() + b * e, qd.begin() + (b + 1) * e), kb(kv_heads * n * d), vb(kb.size());
      for (size_t g = 0; g < kv_heads; ++g)
        for (size_t j = 0; j < n; ++j)
          for (size_t c = 0; c < d; ++c) {
            kb[(g * n + j) * d + c] = kd[((b * capacity + j) * kv_heads + g) * d + c];
            vb[(g * n + j) * d + c] = vd[((b * capacity + j) * kv_heads + g) * d + c];
          }
      const oracle::AttentionCase c{1, q_heads, kv_heads, 1, n, n, d, false, true, 1.0 / std::sqrt(double(d))};
      const oracle::AttentionRef ref = oracle::attention(qb, kb, vb, c);
      double worst = 0;
      for (size_t i = 0; i < e; ++i) {
        const double err = std::fabs(oh[b * e + i] - ref.o[i]) / ref.max_abs_v;
        worst = std::isnan(err) ? err : std::max(worst, err);
      }
      gate::record({"attention_decode_q8.o", "f32", shape + " position " + std::to_string(positions[b]), "v-scaled",
                    worst, attention_bound(ref, c, 0.0, 0.0) + 8 * kU32});
      std::vector<float> row(oh.begin() + b * e, oh.begin() + (b + 1) * e);
      check_int8_activations("attention_decode_q8.o_q8", shape, row, oqh.data() + b * row_bytes);
      Output<uint8_t> alone(row_bytes);
      ops::quantize_activations_q8(dev(), gate::upload(row), alone.buffer, e);
      std::vector<uint8_t> alone_h = alone.raw();
      EXPECT_EQ(0, std::memcmp(alone_h.data(), oqh.data() + b * row_bytes, row_bytes))
          << shape << " row " << b << ": attention_decode_q8's int8 activations differ from quantize_activations_q8's";
    }
  }
}

}  // namespace

TEST(OpsGate, MatvecInt8Activations) {
  // 8197 rows: q4_0r's `_rows4` kernel (four rows a subgroup) where the image has it, the last
  // block's second quad holding one row.
  std::vector<Shape> shapes = {{1, 1024}, {9, 3072}, {100, 4096}, {257, 5120}, {33, 14336}, {5000, 2048}, {8197, 1024}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{4096, 14336}, {14336, 4096}});
  for (bool q4 : {false, true})
    for (Shape s : shapes) check_matvec_a8(q4, s);
}

// Super-blocks of 256: 1, 3, 5, 9, 16 and 56 a row; a 32-lane subgroup takes 4 (q4_k) or 8
// (q6_kr) a step, so most leave lanes idle in the last; row counts leave the last block of 8
// rows part-filled.
TEST(OpsGate, MatvecKQuantsInt8Activations) {
  std::vector<Shape> shapes = {{1, 256}, {9, 768}, {33, 1280}, {7, 2304}, {100, 4096}, {20, 14336}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{4096, 14336}, {14336, 4096}});
  for (bool q6 : {false, true})
    for (Shape s : shapes) check_matvec_k_a8(q6, s);
}

// add_rms_norm_q8: sum and out as add_rms_norm (the oracle's), and each row's int8 activations
// against the definition applied to the out it wrote. Rows of one 32-element block, of a partial
// last step of the kernel's 1024-element walk (1056, 4128), and of whole steps (4096).
TEST(OpsGate, AddRmsNormInt8Activations) {
  for (Shape s : std::vector<Shape>{{1, 32}, {3, 1056}, {2, 4096}, {5, 4128}}) {
    const size_t n = s.rows * s.cols, row_bytes = ops::activation_q8_bytes(s.cols);
    std::vector<float> xh = blocky_values(n), rh = blocky_values(n);
    Vec w;
    auto bw = gate::upload(gate::random_values<float>(s.cols, -2, 2, w));
    Output<float> sum(n), out(n);
    Output<uint8_t> xq(s.rows * row_bytes);
    ops::add_rms_norm_q8(dev(), gate::upload(xh), gate::upload(rh), bw, sum.buffer, out.buffer, xq.buffer, s.rows,
                         s.cols, 1e-6f);
    Vec ref_sum, ref_out;
    oracle::add_rms_norm(gate::values(xh), gate::values(rh), w, s.rows, s.cols, double(1e-6f),
                         [](double v) { return double(float(v)); }, ref_sum, ref_out);
    const std::string shape = gate::shape_string({s.rows, s.cols});
    gate::record({"add_rms_norm_q8.sum", "f32", shape, "exact", gate::row_scaled_error(sum.read(), ref_sum, s.cols), 0.0});
    gate::record({"add_rms_norm_q8", "f32", shape, "row-scaled", gate::row_scaled_error(out.read(), ref_out, s.cols), 1e-5});
    std::vector<float> outh = out.raw();
    std::vector<uint8_t> xqh = xq.raw();
    for (size_t r = 0; r < s.rows; ++r) {
      std::vector<float> row(outh.begin() + r * s.cols, outh.begin() + (r + 1) * s.cols);
      check_int8_activations("add_rms_norm_q8.xq", shape, row, xqh.data() + r * row_bytes);
      // The same bytes as quantize_activations_q8 of that row: a decode step mixes the two (the
      // definition's check above allows either rounding of a value at a midpoint).
      Output<uint8_t> alone(row_bytes);
      ops::quantize_activations_q8(dev(), gate::upload(row), alone.buffer, s.cols);
      std::vector<uint8_t> alone_h = alone.raw();
      EXPECT_EQ(0, std::memcmp(alone_h.data(), xqh.data() + r * row_bytes, row_bytes))
          << shape << " row " << r << ": add_rms_norm_q8's int8 activations differ from quantize_activations_q8's";
    }
  }
}
