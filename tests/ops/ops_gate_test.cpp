// The numeric gate: every op of include/quiver/ops.h, for every element type it is built for,
// on the backend QUIVER_BACKEND names, against the fp64 oracle (oracle.cpp) on fresh random
// inputs. Outputs are poisoned (NaN) before each run and carry a guard of extra poisoned
// elements that must survive: an element left unwritten, or one written past the end, fails.
//
// Metrics and bounds (docs/numerics.md explains them):
//  row-scaled    max |out - ref| / max |ref| of the row: f32 1e-5, f16 1e-3, bf16 8e-3 (the
//                element type's rounding, 2^-11 / 2^-9 of the scale, plus float arithmetic)
//  input-scaled  gelu: the same with max |x| of the row as the scale (gelu(x) -> 0 for x << 0
//                through 1 + erf(x) cancelling, so its error scales with |x|)
//  dot-weighted  max |out - ref| / sum_k |a_k b_k| (matvec, matmul): float accumulation of k
//                products is within gamma_k = k u / (1 - k u) of that, u = 2^-24, in any
//                summation order; plus the output's rounding (f16 2^-11, bf16 2^-9)
//  v-scaled      attention: max |o - ref| / max |v|; the bound is derived per case in
//                attention_bound() from the head dim and the KV length
//  exact         embedding, matmul_w8a8, add, mul, kv_append: bit-for-bit; argmax: the index
//                of every row
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "attention_bound.h"
#include "gate.h"
#include "oracle.h"

namespace {

using gate::Dtype;
using gate::Result;
using oracle::Vec;
namespace ops = quiver::ops;

using gate::gamma;
using gate::kGuard;
using gate::kU32;
using gate::Output;
using gate::random_blocks;

// The element types the op library is built for (kernels/*.cpp); each test runs all of them.
template <typename F>
void for_each_type(F&& f) {
  f.template operator()<float>();
  f.template operator()<quiver::bf16>();
  f.template operator()<quiver::half>();
}

template <typename T>
double scaled_bound() {
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  else if constexpr (std::is_same_v<T, quiver::half>) return 1e-3;
  else return 8e-3;
}
// Rounding of a float result to T, relative: the unit roundoff (0 for float: the accumulation
// bound counts it).
template <typename T>
double output_rounding() {
  if constexpr (std::is_same_v<T, float>) return 0;
  else return Dtype<T>::unit_roundoff;
}
// The same rounding where it is absolute: a half result below 2^-14 is subnormal, rounded to a
// multiple of 2^-24: a 1 x 1 x 1 matmul of inputs in [-1, 1] lands there about once in a
// thousand runs, and then failed a bound that counted only the relative rounding.
template <typename T>
double output_underflow() {
  return std::is_same_v<T, quiver::half> ? 0x1p-25 : 0;
}

quiver::Device& dev() { return gate::device(); }

template <typename T>
quiver::Buffer<T> random_buffer(size_t n, double lo, double hi, Vec& exact) {
  return gate::upload(gate::random_values<T>(n, lo, hi, exact));
}

struct RowShape {
  size_t rows, cols;
};
std::vector<RowShape> row_shapes() {
  // 2056: a register-cached row whose last 16-byte chunk only thread 0 holds; 1540 (% 8 = 4):
  // cached as float, the 4-wide loop as half / bf16; 8192: too long for the register-cached path.
  std::vector<RowShape> s = {{1, 1}, {3, 17}, {9, 24}, {5, 1000}, {19, 1024}, {33, 4096}, {6, 2056}, {4, 1540},
                             {2, 4099}, {2, 8192}};
  // Big shapes stay under 2^27 bytes per f32 buffer (lavapipe's maxStorageBufferRange).
  if (gate::big_shapes()) s.insert(s.end(), {{4096, 1024}, {8000, 4096}, {70000, 64}});
  return s;
}

// ---- Normalisation -------------------------------------------------------------------------------
TEST(OpsGate, RmsNorm) {
  for_each_type([]<typename T>() {
    std::vector<RowShape> shapes = row_shapes();
    // More rows than blocks in grid.x: the rows continue in grid.y (host code shared by every row
    // op and element type; one type suffices, and the 65537 blocks take seconds on CPU and lavapipe).
    if constexpr (std::is_same_v<T, float>) shapes.push_back({65537, 3});
    for (RowShape s : shapes) {
      Vec x, w;
      auto bx = random_buffer<T>(s.rows * s.cols, -2, 2, x);
      auto bw = random_buffer<T>(s.cols, 0.5, 1.5, w);
      Output<T> out(s.rows * s.cols);
      ops::rms_norm(dev(), bx, bw, out.buffer, s.rows, s.cols, 1e-6f);
      Vec ref = oracle::rms_norm(x, w, s.rows, s.cols, double(1e-6f));
      gate::record({"rms_norm", Dtype<T>::name, gate::shape_string({s.rows, s.cols}), "row-scaled",
                    gate::row_scaled_error(out.read(), ref, s.cols), scaled_bound<T>()});
    }
  });
}

TEST(OpsGate, LayerNorm) {
  for_each_type([]<typename T>() {
    for (RowShape s : row_shapes()) {
      Vec x, w, b;
      auto bx = random_buffer<T>(s.rows * s.cols, 1, 3, x);   // an offset mean, so centring matters
      auto bw = random_buffer<T>(s.cols, 0.5, 1.5, w);
      auto bb = random_buffer<T>(s.cols, -0.5, 0.5, b);
      Output<T> out(s.rows * s.cols);
      ops::layer_norm(dev(), bx, bw, bb, out.buffer, s.rows, s.cols, 1e-5f);
      Vec ref = oracle::layer_norm(x, w, b, s.rows, s.cols, double(1e-5f));
      gate::record({"layer_norm", Dtype<T>::name, gate::shape_string({s.rows, s.cols}), "row-scaled",
                    gate::row_scaled_error(out.read(), ref, s.cols), scaled_bound<T>()});
    }
  });
}

TEST(OpsGate, AddRmsNorm) {
  for_each_type([]<typename T>() {
    for (RowShape s : row_shapes()) {
      Vec x, r, w;
      auto bx = random_buffer<T>(s.rows * s.cols, -2, 2, x);
      auto br = random_buffer<T>(s.rows * s.cols, -2, 2, r);
      auto bw = random_buffer<T>(s.cols, 0.5, 1.5, w);
      Output<T> sum(s.rows * s.cols), out(s.rows * s.cols);
      ops::add_rms_norm(dev(), bx, br, bw, sum.buffer, out.buffer, s.rows, s.cols, 1e-6f);
      Vec ref_sum, ref_out;
      oracle::add_rms_norm(x, r, w, s.rows, s.cols, double(1e-6f),
                           // the op's definition: T(float(x) + float(residual))
                           [](double v) { return Dtype<T>::value(Dtype<T>::from(double(float(v)))); }, ref_sum,
                           ref_out);
      std::string shape = gate::shape_string({s.rows, s.cols});
      // The sum is one addition of two T values rounded to T: exact against the rounded oracle.
      gate::record({"add_rms_norm.sum", Dtype<T>::name, shape, "exact",
                    gate::row_scaled_error(sum.read(), ref_sum, s.cols), 0.0});
      gate::record({"add_rms_norm", Dtype<T>::name, shape, "row-scaled",
                    gate::row_scaled_error(out.read(), ref_out, s.cols), scaled_bound<T>()});
    }
  });
}

// ---- Softmax -----------------------------------------------------------------------------------------
TEST(OpsGate, Softmax) {
  for_each_type([]<typename T>() {
    for (RowShape s : row_shapes()) {
      for (bool log : {false, true}) {
        Vec x;
        auto bx = random_buffer<T>(s.rows * s.cols, -8, 8, x);
        Output<T> out(s.rows * s.cols);
        if (log) ops::log_softmax(dev(), bx, out.buffer, s.rows, s.cols);
        else ops::softmax(dev(), bx, out.buffer, s.rows, s.cols);
        Vec ref = log ? oracle::log_softmax(x, s.rows, s.cols) : oracle::softmax(x, s.rows, s.cols);
        gate::record({log ? "log_softmax" : "softmax", Dtype<T>::name, gate::shape_string({s.rows, s.cols}),
                      "row-scaled", gate::row_scaled_error(out.read(), ref, s.cols), scaled_bound<T>()});
      }
    }
  });
}

// ---- Activations (element-wise; rows only group the error's scale) --------------------------------------
std::vector<RowShape> elementwise_shapes() {
  std::vector<RowShape> s = {{1, 1}, {3, 1001}, {64, 4097}};
  // More than 65535 blocks of 256: the grid is capped and the kernels loop.
  if (gate::big_shapes()) s.insert(s.end(), {{4096, 4096}, {8000, 4096}});
  return s;
}

TEST(OpsGate, SiluGate) {
  for_each_type([]<typename T>() {
    for (RowShape s : elementwise_shapes()) {
      size_t n = s.rows * s.cols;
      Vec x, g;
      auto bx = random_buffer<T>(n, -8, 8, x);
      auto bg = random_buffer<T>(n, -2, 2, g);
      Output<T> out(n);
      ops::silu_gate(dev(), bx, bg, out.buffer, n);
      gate::record({"silu_gate", Dtype<T>::name, gate::shape_string({s.rows, s.cols}), "row-scaled",
                    gate::row_scaled_error(out.read(), oracle::silu_gate(x, g), s.cols), scaled_bound<T>()});
    }
  });
}

TEST(OpsGate, Gelu) {
  for_each_type([]<typename T>() {
    for (RowShape s : elementwise_shapes()) {
      for (ops::GeluForm form : {ops::GeluForm::Erf, ops::GeluForm::Tanh}) {
        size_t n = s.rows * s.cols;
        Vec x;
        auto bx = random_buffer<T>(n, -6, 6, x);
        Output<T> out(n);
        ops::gelu(dev(), bx, out.buffer, n, form);
        bool tanh_form = form == ops::GeluForm::Tanh;
        Vec ref = tanh_form ? oracle::gelu_tanh(x) : oracle::gelu_erf(x);
        gate::record({tanh_form ? "gelu_tanh" : "gelu_erf", Dtype<T>::name, gate::shape_string({s.rows, s.cols}),
                      "input-scaled", gate::row_scaled_error(out.read(), ref, s.cols, x), scaled_bound<T>()});
      }
    }
  });
}

// ---- Rotary embedding ------------------------------------------------------------------------------------
TEST(OpsGate, Rope) {
  struct Case {
    size_t tokens, heads, head_dim, rotary_dim;
  };
  // {6, 11, 64, 48}: three blocks of kernels/elementwise.cpp's 4 heads per thread, the last
  // partial, with pairs past the rotary dimensions copied.
  std::vector<Case> cases = {{1, 1, 2, 2}, {7, 3, 64, 64}, {20, 4, 128, 128}, {5, 2, 96, 64}, {6, 11, 64, 48}};
  if (gate::big_shapes()) cases.push_back({4096, 32, 128, 128});
  for_each_type([&]<typename T>() {
    for (const Case& c : cases) {
      for (ops::RopeStyle style : {ops::RopeStyle::NeoX, ops::RopeStyle::GptJ}) {
        size_t n = c.tokens * c.heads * c.head_dim;
        Vec x;
        auto bx = random_buffer<T>(n, -2, 2, x);
        std::vector<int32_t> pos(c.tokens);
        std::uniform_int_distribution<int32_t> position(0, 65535);   // angles up to 65535 rad
        for (int32_t& p : pos) p = position(gate::rng());
        std::vector<float> inv_freq = ops::rope_inv_freq(c.rotary_dim, 10000.0);
        auto bpos = gate::upload(pos);
        auto bfreq = gate::upload(inv_freq);
        Output<T> out(n);
        ops::rope(dev(), bx, bpos, bfreq, out.buffer, c.tokens, c.heads, c.head_dim, style);
        bool gptj = style == ops::RopeStyle::GptJ;
        Vec ref = oracle::rope(x, pos, inv_freq, c.tokens, c.heads, c.head_dim, gptj);
        gate::record({gptj ? "rope_gptj" : "rope_neox", Dtype<T>::name,
                      gate::shape_string({c.tokens, c.heads, c.head_dim}) +
                          (c.rotary_dim < c.head_dim ? "/rot" + std::to_string(c.rotary_dim) : ""),
                      "row-scaled", gate::row_scaled_error(out.read(), ref, c.head_dim), scaled_bound<T>()});
      }
    }
  });
}

// ---- Embedding gather --------------------------------------------------------------------------------------
TEST(OpsGate, Embedding) {
  struct Case {
    size_t tokens, vocab, dim;
  };
  std::vector<Case> cases = {{1, 1, 1}, {50, 1000, 64}, {9, 300, 301}};
  for_each_type([&]<typename T>() {
    for (const Case& c : cases) {
      Vec table;
      auto btable = random_buffer<T>(c.vocab * c.dim, -1, 1, table);
      std::vector<int32_t> ids(c.tokens);
      std::uniform_int_distribution<int32_t> id(0, int32_t(c.vocab) - 1);
      for (int32_t& i : ids) i = id(gate::rng());
      if (c.tokens > 2) {   // ids outside the table give zero rows
        ids[1] = -1;
        ids[2] = int32_t(c.vocab);
      }
      auto bids = gate::upload(ids);
      Output<T> out(c.tokens * c.dim);
      ops::embedding(dev(), btable, bids, out.buffer, c.tokens, c.vocab, c.dim);
      Vec ref = oracle::embedding(table, ids, c.vocab, c.dim);
      gate::record({"embedding", Dtype<T>::name, gate::shape_string({c.tokens, c.vocab, c.dim}), "exact",
                    gate::row_scaled_error(out.read(), ref, c.dim), 0.0});
    }
  });
}

// ---- Argmax ----------------------------------------------------------------------------------------------
// Rows of mismatching indices against the oracle (0 passes); a row the op left unwritten keeps its
// poison (0xA5A5A5A5), which is no column.
template <typename T>
void check_argmax(const std::vector<T>& host, size_t rows, size_t cols, const std::string& what) {
  auto bx = gate::upload(host);
  Output<int32_t> out(rows);
  ops::argmax(dev(), bx, out.buffer, rows, cols);
  std::vector<int32_t> got = out.raw(), ref = oracle::argmax(gate::values(host), rows, cols);
  size_t wrong = 0;
  for (size_t r = 0; r < rows; ++r) {
    if (got[r] == ref[r]) continue;
    if (wrong++ == 0) ADD_FAILURE() << "argmax " << what << " row " << r << ": got " << got[r] << ", expected " << ref[r];
  }
  gate::record({"argmax", Dtype<T>::name, gate::shape_string({rows, cols}) + what, "exact", double(wrong), 0.0});
}

TEST(OpsGate, Argmax) {
  // 7 and 1000 (% 8 = 0 but 1000 / 8 = 125 chunks: the last group of four partial); 4099 and
  // 50257 (GPT-2's vocabulary): rows that start off 16-byte boundaries, with columns before the
  // first chunk and after the last; 128256 (Llama 3's vocabulary: many groups of four chunks per
  // thread).
  std::vector<RowShape> shapes = {{1, 1}, {3, 7}, {5, 1000}, {4, 4099}, {3, 50257}, {2, 128256}, {1, 128256}};
  if (gate::big_shapes()) shapes.push_back({32, 128256});
  for_each_type([&]<typename T>() {
    for (RowShape s : shapes) {
      Vec x;
      std::vector<T> host = gate::random_values<T>(s.rows * s.cols, -4, 4, x);
      check_argmax(host, s.rows, s.cols, "");
      // The maximum alone among a row's first or last 8 columns (alternating rows): where rows
      // that start off a 16-byte boundary have their columns outside whole chunks.
      std::vector<T> edges = host;
      std::uniform_int_distribution<size_t> edge(0, std::min<size_t>(s.cols, 8) - 1);
      for (size_t r = 0; r < s.rows; ++r)
        edges[r * s.cols + (r % 2 == 0 ? edge(gate::rng()) : s.cols - 1 - edge(gate::rng()))] = Dtype<T>::from(8.0);
      check_argmax(edges, s.rows, s.cols, " edges");
      // Duplicated maxima: 8 is above every random value; two or three copies at random columns
      // in each row, so the lowest must win whichever thread or chunk each copy falls in.
      std::uniform_int_distribution<size_t> col(0, s.cols - 1);
      for (size_t r = 0; r < s.rows; ++r)
        for (int copy = 0; copy < 3; ++copy) host[r * s.cols + col(gate::rng())] = Dtype<T>::from(8.0);
      check_argmax(host, s.rows, s.cols, " ties");
    }
  });
}

// Infinities, signed zeros and NaN (which ranks above everything, as torch.argmax ranks it).
TEST(OpsGate, ArgmaxSpecialValues) {
  for_each_type([]<typename T>() {
    for (size_t cols : {8, 9, 1000, 4096}) {   // chunked and element-by-element rows
      const double inf = INFINITY;
      std::uniform_int_distribution<size_t> col(0, cols - 1);
      std::bernoulli_distribution sign(0.5);
      std::vector<T> host;
      auto row = [&](std::function<double(size_t)> value) {
        for (size_t c = 0; c < cols; ++c) host.push_back(Dtype<T>::from(value(c)));
      };
      Vec x;
      std::vector<T> noise = gate::random_values<T>(cols, -4, 4, x);
      size_t a = col(gate::rng()), b = col(gate::rng());
      row([&](size_t) { return -inf; });                                          // all -inf: column 0
      row([&](size_t) { return sign(gate::rng()) ? -0.0 : 0.0; });                // signed zeros are equal
      row([&](size_t c) { return c == a || c == b ? NAN : x[c]; });               // the first NaN
      row([&](size_t c) { return c == a || c == b ? inf : x[c]; });               // the first +inf
      row([&](size_t c) { return c == a ? NAN : c == b ? inf : x[c]; });          // NaN above +inf
      row([&](size_t c) { return -std::fabs(x[c]) - 1; });                        // all negative
      row([&](size_t c) { return c == b ? -inf : c == a ? NAN : -inf; });         // NaN among -inf
      check_argmax(host, host.size() / cols, cols, " special");
    }
  });
}

// ---- top-k ------------------------------------------------------------------------------------------------
// Indices exactly as the oracle ranks; values bit for bit the elements at those columns.
template <typename T>
void check_topk(const std::vector<T>& host, size_t rows, size_t cols, size_t k, const std::string& what) {
  auto bx = gate::upload(host);
  Output<T> values(rows * k);
  Output<int32_t> indices(rows * k);
  ops::topk(dev(), bx, values.buffer, indices.buffer, rows, cols, k);
  std::vector<int32_t> got = indices.raw(), ref = oracle::topk(gate::values(host), rows, cols, k);
  std::vector<T> got_values = values.raw();
  size_t wrong = 0;
  for (size_t i = 0; i < rows * k; ++i) {
    const T& expected = host[(i / k) * cols + size_t(ref[i])];
    if (got[i] == ref[i] && std::memcmp(&got_values[i], &expected, sizeof(T)) == 0) continue;
    if (wrong++ == 0)
      ADD_FAILURE() << "topk " << what << " row " << i / k << " rank " << i % k << ": got column " << got[i]
                    << ", expected " << ref[i];
  }
  gate::record({"topk", Dtype<T>::name, gate::shape_string({rows, cols}) + " k " + std::to_string(k) + what,
                "exact", double(wrong), 0.0});
}

TEST(OpsGate, Topk) {
  struct Case {
    size_t rows, cols, k;
  };
  const Case cases[] = {{1, 1, 1}, {3, 7, 7}, {5, 1000, 40}, {4, 4099, 3}, {2, 128256, 50}};
  for_each_type([&]<typename T>() {
    for (const Case& c : cases) {
      Vec x;
      std::vector<T> host = gate::random_values<T>(c.rows * c.cols, -4, 4, x);
      check_topk(host, c.rows, c.cols, c.k, "");
      // Many ties: nine values only, so equal elements must come out by increasing column.
      std::uniform_int_distribution<int> level(-4, 4);
      for (T& v : host) v = Dtype<T>::from(level(gate::rng()));
      check_topk(host, c.rows, c.cols, c.k, " ties");
    }
    // NaN first, +inf, signed zeros equal, -inf last.
    const size_t cols = 64;
    std::vector<T> host(cols);
    std::uniform_int_distribution<int> pick(0, 5);
    const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0};
    for (T& v : host) v = Dtype<T>::from(special[pick(gate::rng())]);
    check_topk(host, 1, cols, cols, " special");
  });
}

// ---- add / mul ------------------------------------------------------------------------------------------
TEST(OpsGate, AddMul) {
  for_each_type([]<typename T>() {
    for (RowShape s : elementwise_shapes()) {
      for (bool mul : {false, true}) {
        for (bool in_place : {false, true}) {   // out is the same Buffer as a
          size_t n = s.rows * s.cols;
          Vec a, b;
          auto ba = random_buffer<T>(n, -2, 2, a);
          auto bb = random_buffer<T>(n, -2, 2, b);
          Output<T> out(n);
          const quiver::Buffer<T>& dst = in_place ? ba : out.buffer;
          if (mul) ops::mul(dev(), ba, bb, dst, n);
          else ops::add(dev(), ba, bb, dst, n);
          Vec ref = mul ? oracle::mul(a, b) : oracle::add(a, b);
          // The op's definition: float arithmetic, then one rounding to T.
          for (double& v : ref) v = Dtype<T>::value(Dtype<T>::from(double(float(v))));
          Vec got = in_place ? gate::values(gate::download(ba)) : out.read();
          gate::record({std::string(mul ? "mul" : "add") + (in_place ? " (out = a)" : ""), Dtype<T>::name,
                        gate::shape_string({s.rows, s.cols}), "exact", gate::row_scaled_error(got, ref, s.cols), 0.0});
        }
      }
    }
  });
}

// ---- Element type conversion --------------------------------------------------------------------------------
// Every pair of distinct float types: one rounding to nearest even of the exact input (bit for
// bit). Magnitudes from 2^-15 to 2^15 reach half's subnormals and its largest binades.
TEST(OpsGate, Convert) {
  for_each_type([]<typename S>() {
    for_each_type([]<typename D>() {
      if constexpr (!std::is_same_v<S, D>) {
        for (RowShape s : elementwise_shapes()) {
          size_t n = s.rows * s.cols;
          std::uniform_real_distribution<double> mantissa(-1, 1);
          std::uniform_int_distribution<int> exponent(-15, 15);
          std::vector<S> x(n);
          Vec ref(n);
          for (size_t i = 0; i < n; ++i) {
            x[i] = Dtype<S>::from(std::ldexp(mantissa(gate::rng()), exponent(gate::rng())));
            ref[i] = Dtype<D>::value(Dtype<D>::from(Dtype<S>::value(x[i])));
          }
          Output<D> out(n);
          ops::convert(dev(), gate::upload(x), out.buffer, n);
          gate::record({"convert", std::string(Dtype<S>::name) + " -> " + Dtype<D>::name,
                        gate::shape_string({s.rows, s.cols}), "exact", gate::row_scaled_error(out.read(), ref, s.cols),
                        0.0});
        }
      }
    });
  });
}

// ---- KV cache append --------------------------------------------------------------------------------------
TEST(OpsGate, KvAppend) {
  struct Case {
    size_t batch, heads, head_dim, capacity;
    bool bshd;
  };
  // head_dim 7: the element-by-element path; 4 (% 8 = 4): chunks for float only.
  std::vector<Case> cases = {{1, 2, 64, 16, false}, {2, 3, 7, 10, true}, {1, 8, 128, 40, true}, {3, 1, 4, 9, false}};
  for_each_type([&]<typename T>() {
    for (const Case& c : cases) {
      size_t cache_n = c.batch * c.heads * c.capacity * c.head_dim;
      Output<T> cache(cache_n);
      Vec ref(cache_n, NAN);   // poison: positions never appended stay NaN
      ops::KvCacheShape shape;
      shape.batch = c.batch;
      shape.kv_heads = c.heads;
      shape.head_dim = c.head_dim;
      shape.kv_capacity = c.capacity;
      shape.layout = c.bshd ? ops::AttentionLayout::BSHD : ops::AttentionLayout::BHSD;
      // One position Buffer for every step, rewritten in device memory between them: the op
      // reads it when it runs. Steps: a 3-token prefill at 1 (sequence b at 1 + b), a decode
      // token right after it, a 2-token append whose second row is past the capacity, then
      // positions that write nothing: past the capacity, negative, INT32_MAX (no overflow).
      auto position = gate::upload(std::vector<int32_t>(c.batch, 0));
      struct Step {
        size_t tokens;
        int32_t first;   // position of sequence 0; sequence b adds b (except for the invalid ones)
        bool shift;
      };
      int32_t cap = int32_t(c.capacity);
      for (Step step : {Step{3, 1, true}, Step{1, 4, true}, Step{2, cap - 1, false}, Step{1, cap, false},
                        Step{2, -1, false}, Step{1, INT32_MAX, false}}) {
        std::vector<int32_t> pos(c.batch);
        for (size_t b = 0; b < c.batch; ++b) pos[b] = step.first + (step.shift ? int32_t(b) : 0);
        position.upload(pos);
        Vec src;
        auto bsrc = random_buffer<T>(c.batch * step.tokens * c.heads * c.head_dim, -2, 2, src);
        ops::kv_append(dev(), bsrc, position, cache.buffer, step.tokens, shape);
        oracle::kv_append(ref, src, pos, c.batch, step.tokens, c.heads, c.head_dim, c.capacity, c.bshd);
      }
      // Exact copies where appended, the poison (NaN) everywhere else.
      Vec got = cache.read();
      size_t wrong = 0;
      for (size_t i = 0; i < cache_n; ++i)
        if (std::isnan(got[i]) != std::isnan(ref[i]) || (!std::isnan(ref[i]) && got[i] != ref[i])) ++wrong;
      gate::record({"kv_append", Dtype<T>::name,
                    gate::shape_string({c.batch, c.heads, c.capacity, c.head_dim}) + (c.bshd ? " bshd" : ""), "exact",
                    double(wrong), 0.0});
    }
  });
}

// ---- Matrix-vector ---------------------------------------------------------------------------------------------
TEST(OpsGate, Matvec) {
  // cols 33: element by element; 36: 4 at a time (16-bit rows: not whole 16-byte chunks).
  std::vector<RowShape> shapes = {{1, 1}, {7, 33}, {5, 36}, {300, 1000}, {64, 4096}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{4096, 4096}, {8000, 4096}});
  for_each_type([&]<typename T>() {
    for (RowShape s : shapes) {
      Vec w, x, weight;
      auto bw = random_buffer<T>(s.rows * s.cols, -1, 1, w);
      auto bx = random_buffer<T>(s.cols, -1, 1, x);
      Output<T> y(s.rows);
      ops::matvec(dev(), bw, bx, y.buffer, s.rows, s.cols);
      Vec ref = oracle::matvec(w, x, s.rows, s.cols, weight);
      gate::record({"matvec", Dtype<T>::name, gate::shape_string({s.rows, s.cols}), "dot-weighted",
                    gate::weighted_error(y.read(), ref, weight, output_underflow<T>()), gamma(s.cols) + output_rounding<T>()});
      if constexpr (!std::is_same_v<T, float>) {
        // The same 16-bit weights with float activations and outputs: widened exactly, so only
        // the float dot product rounds.
        Vec xf;
        auto bxf = random_buffer<float>(s.cols, -1, 1, xf);
        Output<float> yf(s.rows);
        ops::matvec(dev(), bw, bxf, yf.buffer, s.rows, s.cols);
        Vec ref_f = oracle::matvec(w, xf, s.rows, s.cols, weight);
        gate::record({"matvec", std::string(Dtype<T>::name) + " w, f32 x", gate::shape_string({s.rows, s.cols}),
                      "dot-weighted", gate::weighted_error(yf.read(), ref_f, weight), gamma(s.cols)});
      }
    }
  });
}

// matvec_q8_0 / q4_0 (or, repacked, matvec_q8_0r / q4_0r on ops::repack_* of the same blocks) of
// random blocks against the oracle on the GGUF blocks. d * q is exact in float, so the only
// error is the float dot product's.
void check_q8_0_q4_0_matvec(bool q4, bool repacked, RowShape s) {
  std::vector<uint8_t> blocks = random_blocks(s.rows, s.cols, 32, q4 ? 18 : 34, {0});
  Vec x, weight;
  auto bx = random_buffer<float>(s.cols, -1, 1, x);
  auto bw = gate::upload(!repacked ? blocks
                         : q4      ? ops::repack_q4_0(blocks, s.rows, s.cols)
                                   : ops::repack_q8_0(blocks, s.rows, s.cols));
  Output<float> y(s.rows);
  auto run = q4 ? (repacked ? ops::matvec_q4_0r : ops::matvec_q4_0) : (repacked ? ops::matvec_q8_0r : ops::matvec_q8_0);
  run(dev(), bw, bx, y.buffer, s.rows, s.cols);
  Vec w = q4 ? oracle::dequantize_q4_0(blocks, s.rows, s.cols) : oracle::dequantize_q8_0(blocks, s.rows, s.cols);
  Vec ref = oracle::matvec(w, x, s.rows, s.cols, weight);
  gate::record({std::string(q4 ? "matvec_q4_0" : "matvec_q8_0") + (repacked ? "r" : ""), "f32",
                gate::shape_string({s.rows, s.cols}), "dot-weighted", gate::weighted_error(y.read(), ref, weight),
                gamma(s.cols)});
}

TEST(OpsGate, MatvecQuantized) {
  // Row counts that leave the last block of 8 rows part-filled (1, 9, 100, 257, 33: one row, so
  // three of its four subgroups have none); rows of 4 and 12 groups of 8 leave lanes of a 32-wide
  // subgroup idle, 64, 160 and 512 groups fill its steps.
  std::vector<RowShape> shapes = {{1, 32}, {9, 96}, {100, 4096}, {257, 512}, {33, 1280}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{4096, 4096}, {14336, 4096}});
  for (bool q4 : {false, true})
    for (RowShape s : shapes) check_q8_0_q4_0_matvec(q4, false, s);
}

// The repacked layouts (ops::repack_q4_0 / repack_q8_0 of random GGUF blocks) against the oracle
// on the GGUF blocks themselves. Chunk counts cover the kernel's four-chunk (q4_0), two-chunk and
// single-chunk loads (1, 2, 3, 4, 5, 9, 14); row counts leave blocks of 8 rows part-filled.
TEST(OpsGate, MatvecRepacked) {
  std::vector<RowShape> shapes = {{1, 1024}, {9, 3072}, {100, 4096}, {257, 5120}, {33, 14336}, {2, 9216}, {5000, 2048}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{1024, 4096}, {4096, 14336}, {14336, 4096}});
  for (bool q4 : {false, true})
    for (RowShape s : shapes) check_q8_0_q4_0_matvec(q4, true, s);
  for_each_type([&]<typename T>() {
    for (bool q4 : {false, true}) {
      RowShape s{3, 2048};
      std::vector<uint8_t> blocks = random_blocks(s.rows, s.cols, 32, q4 ? 18 : 34, {0});
      auto bw = gate::upload(q4 ? ops::repack_q4_0(blocks, s.rows, s.cols) : ops::repack_q8_0(blocks, s.rows, s.cols));
      Output<T> out(s.rows * s.cols);
      if (q4) ops::dequantize_q4_0r(dev(), bw, out.buffer, s.rows, s.cols);
      else ops::dequantize_q8_0r(dev(), bw, out.buffer, s.rows, s.cols);
      Vec ref = q4 ? oracle::dequantize_q4_0(blocks, s.rows, s.cols) : oracle::dequantize_q8_0(blocks, s.rows, s.cols);
      Vec got = out.read();
      double err = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        double e = std::abs(got[i] - ref[i]) / std::max(std::abs(ref[i]), 0x1p-14);
        err = std::isnan(e) ? INFINITY : std::max(err, e);
      }
      gate::record({q4 ? "dequantize_q4_0r" : "dequantize_q8_0r", Dtype<T>::name, gate::shape_string({s.rows, s.cols}),
                    "rounding", err, output_rounding<T>()});
    }
  });
}

// Every format into every float type: each element formed in float (exact but for q4_k's
// d scale q - dmin min, one float rounding) and rounded once to T. The error is relative to
// max(|ref|, 2^-14), where half's subnormals start (their spacing, 2^-24, is half's unit
// roundoff at 2^-14).
TEST(OpsGate, Dequantize) {
  struct Format {
    const char* name;
    size_t block_elems, block_bytes;
    std::initializer_list<size_t> halves;
  };
  const Format formats[] = {{"q8_0", 32, 34, {0}}, {"q4_0", 32, 18, {0}}, {"q4_k", 256, 144, {0, 2}}, {"q6_k", 256, 210, {208}},
                            {"q6_kr", 256, 210, {208}}};   // q6_kr: the q6_k blocks through ops::repack_q6_k
  for_each_type([&]<typename T>() {
    for (const Format& f : formats) {
      for (RowShape s : std::vector<RowShape>{{1, 256}, {9, 768}, {100, 1280}}) {
        std::vector<uint8_t> blocks = random_blocks(s.rows, s.cols, f.block_elems, f.block_bytes, f.halves);
        auto bw = gate::upload(blocks);
        size_t n = s.rows * s.cols;
        Output<T> out(n);
        Vec magnitude, ref;
        const std::string name = f.name;
        if (name == "q8_0") {
          ops::dequantize_q8_0(dev(), bw, out.buffer, s.rows, s.cols);
          ref = oracle::dequantize_q8_0(blocks, s.rows, s.cols);
        } else if (name == "q4_0") {
          ops::dequantize_q4_0(dev(), bw, out.buffer, s.rows, s.cols);
          ref = oracle::dequantize_q4_0(blocks, s.rows, s.cols);
        } else if (name == "q4_k") {
          ops::dequantize_q4_k(dev(), bw, out.buffer, s.rows, s.cols);
          ref = oracle::dequantize_q4_k(blocks, s.rows, s.cols, magnitude);
        } else if (name == "q6_k") {
          ops::dequantize_q6_k(dev(), bw, out.buffer, s.rows, s.cols);
          ref = oracle::dequantize_q6_k(blocks, s.rows, s.cols, magnitude);
        } else {
          ops::dequantize_q6_kr(dev(), gate::upload(ops::repack_q6_k(blocks, s.rows, s.cols)), out.buffer, s.rows, s.cols);
          ref = oracle::dequantize_q6_k(blocks, s.rows, s.cols, magnitude);
        }
        Vec got = out.read();
        double err = 0;
        for (size_t i = 0; i < n; ++i) {
          double e = std::abs(got[i] - ref[i]) / std::max(std::abs(ref[i]), 0x1p-14);
          err = std::isnan(e) ? INFINITY : std::max(err, e);
        }
        double bound = output_rounding<T>() + (name == "q4_k" ? 2 * kU32 : 0.0);   // q4_k: one float rounding (and the division's)
        gate::record({"dequantize_" + name, Dtype<T>::name, gate::shape_string({s.rows, s.cols}), "rounding", err, bound});
      }
    }
  });
}

TEST(OpsGate, MatvecKQuants) {
  // Super-blocks of 256: 1, 3, 16, 2, 5 and 9 per row; a 32-wide subgroup takes 4 per step, so
  // 1, 2, 5 and 9 leave lanes idle. Row counts leave the last block of 8 rows part-filled.
  std::vector<RowShape> shapes = {{1, 256}, {9, 768}, {100, 4096}, {257, 512}, {33, 1280}, {7, 2304}};
  if (gate::big_shapes()) shapes.insert(shapes.end(), {{4096, 4096}, {14336, 4096}});
  for (bool q6 : {false, true}) {
    for (RowShape s : shapes) {
      // q4_k: f16 d and dmin at bytes 0 and 2; q6_k: f16 d at byte 208.
      std::vector<uint8_t> blocks = q6 ? random_blocks(s.rows, s.cols, 256, 210, {208})
                                       : random_blocks(s.rows, s.cols, 256, 144, {0, 2});
      Vec x, magnitude, weight;
      auto bx = random_buffer<float>(s.cols, -1, 1, x);
      auto bw = gate::upload(blocks);
      Output<float> y(s.rows);
      if (q6) ops::matvec_q6_k(dev(), bw, bx, y.buffer, s.rows, s.cols);
      else ops::matvec_q4_k(dev(), bw, bx, y.buffer, s.rows, s.cols);
      Vec w = q6 ? oracle::dequantize_q6_k(blocks, s.rows, s.cols, magnitude)
                 : oracle::dequantize_q4_k(blocks, s.rows, s.cols, magnitude);
      Vec ref = oracle::matvec(w, x, s.rows, s.cols, weight);
      oracle::matvec(magnitude, x, s.rows, s.cols, weight);   // weight: sum_k magnitude |x|
      // A weight is up to two exact float products (q4_k: d scale q and dmin min; q6_k: d scale
      // and q - 32), so the float sums of the 2 cols terms bound the error (docs/ops.md).
      gate::record({q6 ? "matvec_q6_k" : "matvec_q4_k", "f32", gate::shape_string({s.rows, s.cols}),
                    "dot-weighted", gate::weighted_error(y.read(), ref, weight), gamma(2 * s.cols)});
    }
  }
}

// ---- Matrix products -----------------------------------------------------------------------------------------------
struct MatShape {
  size_t m, n, k;
};
std::vector<MatShape> matmul_shapes() {
  // {256, 384, 192}: whole 128 x 128 tiles and K a multiple of 64 (three K slices), the matrix-unit kernels' case
  // (kernels/matmul_tiles.cpp) where the backend has them; {256, 512, 320}: whole 128 x 256 tiles, five K slices
  // (one more than the warpgroup kernel's ring of four stages, kernels/matmul_wgmma.cpp) where the image has it.
  // {13, 48, 40} and {13, 50, 40}: the CPU image's kernels (kernels/matmul_cpu.cpp) with rows past
  // the last whole tile, and with columns past it (nt); {45, 64, 600}: its nn kernel's blocks of four
  // row tiles (one whole, a partial one) and three depth steps of 256, the last partial.
  std::vector<MatShape> s = {{1, 1, 1},     {17, 33, 65},    {64, 64, 64},   {100, 75, 300},
                             {1, 129, 257}, {256, 384, 192}, {256, 512, 320}, {13, 48, 40}, {13, 50, 40},
                             {45, 64, 600}};
  if (gate::big_shapes()) s.push_back({1024, 1024, 1024});
  return s;
}

TEST(OpsGate, Matmul) {
  for_each_type([]<typename T>() {
    for (MatShape s : matmul_shapes()) {
      for (bool nt : {false, true}) {
        Vec a, b, weight;
        auto ba = random_buffer<T>(s.m * s.k, -1, 1, a);
        auto bb = random_buffer<T>(s.k * s.n, -1, 1, b);
        Output<T> c(s.m * s.n);
        if (nt) ops::matmul_nt(dev(), ba, bb, c.buffer, s.m, s.n, s.k);
        else ops::matmul(dev(), ba, bb, c.buffer, s.m, s.n, s.k);
        Vec ref = oracle::matmul(a, b, s.m, s.n, s.k, nt, weight);
        gate::record({nt ? "matmul_nt" : "matmul", Dtype<T>::name, gate::shape_string({s.m, s.n, s.k}),
                      "dot-weighted", gate::weighted_error(c.read(), ref, weight, output_underflow<T>()),
                      gamma(s.k) + output_rounding<T>()});
      }
    }
  });
}

TEST(OpsGate, MatmulW8A8) {
  std::vector<MatShape> shapes = matmul_shapes();
  shapes.push_back({5, 70, 67});   // k not a multiple of the 4-byte packing
  // The warpgroup kernel's cases (kernels/matmul_w8a8_wgmma.cpp, CUDA sm_90a, k a multiple of 16): whole
  // 128 x 256 tiles over eight K stages (twice around its ring of four); tiles over the edges of m, of an odd n
  // and of k (a tail of one 16-byte chunk); k a single chunk.
  shapes.push_back({256, 512, 1024});
  shapes.push_back({300, 201, 144});
  shapes.push_back({129, 513, 16});
  // Two 128 x 128 tiles of C each way, both cut; k a multiple of 8 (the int8 tile kernel's
  // 8-byte loads, kernels/matmul_w8a8_tiles.cpp) ending in a part of a 64-deep slice.
  shapes.push_back({130, 260, 200});
  for (MatShape s : shapes) {
    std::uniform_int_distribution<int> i8(-128, 127);
    std::uniform_real_distribution<float> scale(1e-3f, 1e-1f);
    std::vector<int8_t> a(s.m * s.k), b(s.n * s.k);
    for (int8_t& v : a) v = int8_t(i8(gate::rng()));
    for (int8_t& v : b) v = int8_t(i8(gate::rng()));
    std::vector<float> sa(s.m), sb(s.n);
    for (float& v : sa) v = scale(gate::rng());
    for (float& v : sb) v = scale(gate::rng());
    auto ba = gate::upload(a), bb = gate::upload(b);
    auto bsa = gate::upload(sa), bsb = gate::upload(sb);
    Output<float> c(s.m * s.n);
    ops::matmul_w8a8(dev(), ba, bb, bsa, bsb, c.buffer, s.m, s.n, s.k);
    std::vector<float> ref = oracle::matmul_w8a8(a, b, sa, sb, s.m, s.n, s.k);
    Vec refd(ref.begin(), ref.end());
    gate::record({"matmul_w8a8", "f32", gate::shape_string({s.m, s.n, s.k}), "exact",
                  gate::row_scaled_error(c.read(), refd, s.n), 0.0});
  }
}

// ---- Attention --------------------------------------------------------------------------------------------
// Bounds: attention_bound.h.

TEST(OpsGate, Attention) {
  // batch, q_heads, kv_heads, q_len, kv_len, kv_capacity, head_dim, bshd, causal, (scale)
  std::vector<oracle::AttentionCase> cases = {
      {1, 2, 2, 5, 5, 5, 64, false, false, 0},
      {2, 4, 2, 33, 100, 120, 64, true, true, 0},     // GQA, KV cache with spare capacity
      {1, 4, 1, 1, 77, 80, 128, false, true, 0},      // decode: one query, multi-query KV
      {1, 2, 2, 40, 40, 40, 128, false, true, 0},     // causal prefill
      {1, 3, 3, 20, 9, 9, 64, true, false, 0},        // more queries than keys (not causal)
      // Several 128-row query blocks and 128-key tiles (kernels/attention_wgmma.cpp), the last
      // of each partial: causal with a diagonal through three tiles, and not causal.
      {1, 2, 1, 300, 300, 320, 64, true, true, 0},
      {1, 2, 2, 130, 260, 260, 128, false, false, 0},
      // A scale of its own, negative: softmax of -0.09 q.k (attention_wgmma negates Q for it).
      {1, 2, 2, 130, 260, 260, 128, false, true, -0.09},
      // Whole 64-row blocks and 64-key steps (kernels/attention_block.cpp on Vulkan's workgroup
      // products): causal GQA over a cache with spare capacity, and not causal.
      {1, 2, 1, 128, 192, 200, 128, true, true, 0},
      {2, 2, 2, 64, 128, 128, 64, false, false, 0},
      // Scores spread far (scale 2): a row's running maximum is raised again and again.
      {1, 2, 2, 64, 256, 256, 128, false, false, 2.0},
      {1, 2, 2, 128, 256, 256, 64, true, true, 2.0},
  };
  if (gate::big_shapes()) cases.push_back({1, 32, 8, 512, 2048, 2048, 128, false, true, 0});
  for_each_type([&]<typename T>() {
    for (oracle::AttentionCase c : cases) {
      const bool own_scale = c.scale != 0;   // else the op's default, 1 / sqrt(head_dim)
      if (!own_scale) c.scale = 1.0 / std::sqrt(double(c.head_dim));
      size_t qn = c.batch * c.q_heads * c.q_len * c.head_dim;
      size_t kvn = c.batch * c.kv_heads * c.kv_capacity * c.head_dim;
      Vec q, k, v;
      auto hq = gate::random_values<T>(qn, -2, 2, q);
      auto hk = gate::random_values<T>(kvn, -2, 2, k);
      auto hv = gate::random_values<T>(kvn, -1, 1, v);
      // Spare capacity holds NaN: reading a position past kv_len poisons the output.
      auto spare = [&](std::vector<T>& buf, Vec& exact) {
        for (size_t b = 0; b < c.batch; ++b)
          for (size_t g = 0; g < c.kv_heads; ++g)
            for (size_t j = c.kv_len; j < c.kv_capacity; ++j)
              for (size_t e = 0; e < c.head_dim; ++e) {
                size_t at = c.bshd ? ((b * c.kv_capacity + j) * c.kv_heads + g) * c.head_dim + e
                                   : ((b * c.kv_heads + g) * c.kv_capacity + j) * c.head_dim + e;
                buf[at] = Dtype<T>::poison();
                exact[at] = NAN;
              }
      };
      spare(hk, k);
      spare(hv, v);
      auto bq = gate::upload(hq), bk = gate::upload(hk), bv = gate::upload(hv);
      Output<T> o(qn);
      ops::AttentionShape shape;
      shape.batch = c.batch;
      shape.q_heads = c.q_heads;
      shape.kv_heads = c.kv_heads;
      shape.q_len = c.q_len;
      shape.kv_len = c.kv_len;
      shape.kv_capacity = c.kv_capacity;
      shape.head_dim = c.head_dim;
      shape.layout = c.bshd ? ops::AttentionLayout::BSHD : ops::AttentionLayout::BHSD;
      shape.causal = c.causal;
      if (own_scale) shape.scale = static_cast<float>(c.scale);
      ops::attention(dev(), bq, bk, bv, o.buffer, shape);
      oracle::AttentionRef ref = oracle::attention(q, k, v, c);
      Vec got = o.read();
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        double e = std::fabs(got[i] - ref.o[i]) / ref.max_abs_v;
        if (std::isnan(e) || e > worst) worst = std::isnan(worst) ? worst : e;
      }
      std::string shape_name = gate::shape_string({c.batch, c.q_heads, c.kv_heads, c.q_len, c.kv_len, c.head_dim}) +
                               (c.causal ? " causal" : "") + (c.bshd ? " bshd" : "") +
                               (own_scale ? " scale " + std::to_string(c.scale) : "");
      gate::record({"attention", Dtype<T>::name, shape_name, "v-scaled", worst,
                    attention_bound(ref, c, output_rounding<T>(), output_rounding<T>())});
    }
  });
}

// attention_decode: one query per sequence over a cache whose length (position[b] + 1) the
// kernels read on the device; chunks of keys combined. The reference is the attention oracle on
// each sequence alone (q_len 1, kv_len = its visible keys); positions past the visible keys hold
// NaN, and so does the workspace. Bound: attention_bound plus the chunks' combination (each
// chunk's weight exp(m_c - m) multiplies its numerator and denominator alike: a few roundings).
TEST(OpsGate, AttentionDecode) {
  struct DecodeCase {
    size_t batch, q_heads, kv_heads, capacity, head_dim;
    bool bshd;
    std::vector<int32_t> positions;   // per sequence
  };
  std::vector<DecodeCase> cases = {
      {1, 4, 1, 80, 128, false, {76}},                  // multi-query, two chunks, the second partial
      {2, 8, 2, 200, 64, true, {0, 130}},               // GQA 4, one key; three chunks
      {1, 32, 8, 300, 128, false, {255}},               // Llama-3's grouping, whole chunks
      {1, 6, 2, 64, 64, false, {63}},                   // groups of 3 (three heads a block)
      {1, 2, 2, 70, 128, false, {500}},                 // past the capacity: the whole cache
      {3, 4, 4, 40, 64, true, {-1, 5, 39}},             // a negative position attends to nothing
      {1, 4, 1, 8300, 64, true, {8290}},                // 130 chunks: more than the combine's threads
      {2, 8, 2, 1500, 128, true, {900, 1100}},          // 24 chunks, 15 and 18 used: the combine's tails
  };
  if (gate::big_shapes()) cases.push_back({1, 32, 8, 4096, 128, false, {2047}});
  for_each_type([&]<typename T>() {
    for (const DecodeCase& dc : cases) {
      const size_t D = dc.head_dim;
      const double scale = 1.0 / std::sqrt(double(D));
      size_t qn = dc.batch * dc.q_heads * D, kvn = dc.batch * dc.kv_heads * dc.capacity * D;
      Vec q, k, v;
      auto hq = gate::random_values<T>(qn, -2, 2, q);
      auto hk = gate::random_values<T>(kvn, -2, 2, k);
      auto hv = gate::random_values<T>(kvn, -1, 1, v);
      auto visible = [&](size_t b) {
        int32_t p = dc.positions[b];
        return p < 0 ? size_t{0} : std::min(size_t(p) + 1, dc.capacity);
      };
      auto at = [&](size_t b, size_t g, size_t j, size_t e) {
        return dc.bshd ? ((b * dc.capacity + j) * dc.kv_heads + g) * D + e
                       : ((b * dc.kv_heads + g) * dc.capacity + j) * D + e;
      };
      for (size_t b = 0; b < dc.batch; ++b)
        for (size_t g = 0; g < dc.kv_heads; ++g)
          for (size_t j = visible(b); j < dc.capacity; ++j)
            for (size_t e = 0; e < D; ++e) {
              hk[at(b, g, j, e)] = hv[at(b, g, j, e)] = Dtype<T>::poison();
              k[at(b, g, j, e)] = v[at(b, g, j, e)] = NAN;
            }
      ops::KvCacheShape cache{dc.batch, dc.kv_heads, D, dc.capacity,
                              dc.bshd ? ops::AttentionLayout::BSHD : ops::AttentionLayout::BHSD};
      auto bq = gate::upload(hq), bk = gate::upload(hk), bv = gate::upload(hv);
      auto bpos = gate::upload(dc.positions);
      auto work = gate::poisoned<float>(ops::attention_decode_workspace(dc.q_heads, cache));
      Output<T> o(qn);
      ops::attention_decode(dev(), bq, bk, bv, bpos, o.buffer, work, dc.q_heads, cache);
      Vec got = o.read();
      for (size_t b = 0; b < dc.batch; ++b) {
        const size_t n = visible(b), per_q = dc.q_heads * D;
        double worst = 0, bound = 0;
        if (n == 0) {
          for (size_t i = 0; i < per_q; ++i)
            if (!(got[b * per_q + i] == 0.0)) worst = std::isnan(got[b * per_q + i]) ? NAN : 1.0;
        } else {
          // This sequence alone, as the attention oracle takes it: BHSD, kv_len = capacity = n.
          Vec qb(q.begin() + b * per_q, q.begin() + (b + 1) * per_q), kb(dc.kv_heads * n * D), vb(kb.size());
          for (size_t g = 0; g < dc.kv_heads; ++g)
            for (size_t j = 0; j < n; ++j)
              for (size_t e = 0; e < D; ++e) {
                kb[(g * n + j) * D + e] = k[at(b, g, j, e)];
                vb[(g * n + j) * D + e] = v[at(b, g, j, e)];
              }
          oracle::AttentionCase c{1, dc.q_heads, dc.kv_heads, 1, n, n, D, false, true, scale};
          oracle::AttentionRef ref = oracle::attention(qb, kb, vb, c);
          for (size_t i = 0; i < per_q; ++i) {
            double e = std::fabs(got[b * per_q + i] - ref.o[i]) / ref.max_abs_v;
            if (std::isnan(e) || e > worst) worst = std::isnan(worst) ? worst : e;
          }
          bound = attention_bound(ref, c, output_rounding<T>(), 0.0) + 8 * kU32;
        }
        gate::record({"attention_decode", Dtype<T>::name,
                      gate::shape_string({dc.batch, dc.q_heads, dc.kv_heads, dc.capacity, D}) + " position " +
                          std::to_string(dc.positions[b]) + (dc.bshd ? " bshd" : ""),
                      "v-scaled", worst, bound});
      }
    }
  });
}

}  // namespace
