// The op gate through WGSL: every op of the op library (kernels/*.cpp) for every element type it
// is built for, launched exactly as runtime/ops/ops.cpp launches it (kernel instance, grid,
// argument order, scalars), against tests/ops' fp64 oracle with the metric and the bound
// tests/ops/ops_gate_test.cpp uses for that op and type. Outputs start as NaN of their element
// type (an element left unwritten fails) followed by a guard of 0xA5 bytes that must survive.
// Shapes are a subset of the gate's, small enough for Mesa llvmpipe, chosen to reach each
// kernel's edge paths (partial blocks, rows not a multiple of 4, tails).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cases.h"
#include "oracle.h"

namespace webcases {

namespace {

using oracle::Vec;

constexpr size_t kGuard = 7;        // poisoned elements after every output (as in the gate)
constexpr double kU32 = 0x1p-24;    // float unit roundoff
double gamma(size_t n) { return double(n) * kU32 / (1 - double(n) * kU32); }

// One element type of the op library: its spelling in kernel names, its storage, the gate's
// row-scaled bound and the relative rounding of a float result stored in it (0 for float: the
// accumulation bounds count it).
struct Elem {
  const char* name;
  size_t bytes;
  double bound;
  double rounding;
  const char* check;   // case_runner.mjs's element kind
};
constexpr Elem kFloat = {"float", 4, 1e-5, 0, "f32"};
constexpr Elem kHalf = {"half", 2, 1e-3, 0x1p-11, "f16"};
constexpr Elem kBf16 = {"bf16", 2, 8e-3, 0x1p-8, "bf16"};
constexpr Elem kElems[] = {kFloat, kHalf, kBf16};

bool is_half(const Elem& e) { return e.name[0] == 'h'; }

// Rounds v to the element type in place (the values the device reads) and returns the bytes.
std::vector<uint8_t> stored(const Elem& e, std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * e.bytes);
  for (size_t i = 0; i < v.size(); ++i) {
    if (e.bytes == 4) {
      std::memcpy(&out[i * 4], &v[i], 4);
      continue;
    }
    uint16_t bits = is_half(e) ? half_bits(v[i]) : bf16_bits(v[i]);
    v[i] = is_half(e) ? half_value(bits) : bf16_value(bits);
    std::memcpy(&out[i * 2], &bits, 2);
  }
  return out;
}
// A double rounded to float, then to the element type (how the kernels store a float result).
double round_to(const Elem& e, double v) {
  float f = float(v);
  if (e.bytes == 4) return f;
  return is_half(e) ? half_value(half_bits(f)) : bf16_value(bf16_bits(f));
}
std::vector<uint8_t> nan_bits(const Elem& e, size_t n) {
  std::vector<uint8_t> out(n * e.bytes);
  for (size_t i = 0; i < n; ++i) {
    if (e.bytes == 4) {
      uint32_t nan = 0x7FC00000u;
      std::memcpy(&out[i * 4], &nan, 4);
    } else {
      uint16_t nan = is_half(e) ? 0x7E01 : 0x7FC1;
      std::memcpy(&out[i * 2], &nan, 2);
    }
  }
  return out;
}
Vec widen(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// The gate's row-scaled metric: max |got - ref| / max |ref| per group of `group` elements.
Check row_scaled(const Elem& e, const Vec& ref, size_t group, double bound) {
  Check c;
  c.kind = "row_scaled";
  c.expect = bytes_of(ref);
  c.elem = e.check;
  c.group = double(group);
  c.bound = bound;
  c.guard = kGuard;
  return c;
}
// |got - ref| / scale[i] per element: the input-scaled, dot-weighted and v-scaled metrics.
Check scaled(const Elem& e, const Vec& ref, Vec scale, double bound) {
  Check c = row_scaled(e, ref, 1, bound);
  c.kind = "scaled";
  for (double& s : scale) s = s > 0 ? s : 1;   // as the gate: an all-zero scale means absolute error
  c.scale = bytes_of(scale);
  return c;
}

// A case of the op library's fat binary.
Case op_case(const std::string& name, const std::string& kernel) {
  Case c{name, kernel};
  c.fatbin = "web_ops.qfb";
  return c;
}
// A poisoned output of n elements of `e` plus the guard.
void output(Case& c, const char* name, const Elem& e, size_t n, Check check) {
  std::vector<uint8_t> init = nan_bits(e, n);
  const size_t bytes = (n + kGuard) * e.bytes;
  init.resize(bytes, 0xA5);
  c.output(name, bytes, std::move(check), std::move(init));
}
std::string shape(std::initializer_list<size_t> dims) {
  std::string s;
  for (size_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// runtime/ops: one block per row (OpCall::row_grid; the shapes here stay below 65536 rows) and
// grid-stride launches of 256-thread blocks capped at 65535 (stride_grid).
void row_grid(Case& c, size_t rows) { c.grid[0] = uint32_t(rows); }
// rms_norm, layer_norm and softmax: rows of at most 1024 elements that start on 16-byte
// boundaries go a subgroup each, 8 rows per block, in the `_short` kernels (runtime/ops).
bool short_rows(const Elem& e, size_t cols) { return cols <= 1024 && cols * e.bytes % 16 == 0; }
std::string row_kernel(const std::string& base, const Elem& e, size_t cols) {
  return base + (short_rows(e, cols) ? "_short<" : "<") + e.name + ">";
}
void short_row_grid(Case& c, const Elem& e, size_t rows, size_t cols) {
  row_grid(c, short_rows(e, cols) ? (rows + 7) / 8 : rows);
}
void stride_grid(Case& c, size_t n) { c.grid[0] = std::max<uint32_t>(1, std::min<uint32_t>(blocks(uint32_t(n), 256), 65535)); }

struct RowShape {
  size_t rows, cols;
};
// Rows a multiple of 4 wide (wide accesses) and not, longer than a block's 256 threads and not.
constexpr RowShape kRowShapes[] = {{37, 1000}, {2, 4099}, {3, 17}};

void row_ops(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  for (RowShape s : kRowShapes) {
    const size_t rows = s.rows, cols = s.cols, n = rows * cols;
    const std::string at = "_" + t + "_" + shape({rows, cols});
    {
      Case c = op_case("rms_norm" + at, row_kernel("rms_norm", e, cols));
      auto x = random_floats(n, -2, 2), w = random_floats(cols, 0.5f, 1.5f);
      c.buffer("x", stored(e, x));
      c.buffer("w", stored(e, w));
      output(c, "out", e, n, row_scaled(e, oracle::rms_norm(widen(x), widen(w), rows, cols, double(1e-6f)), cols, e.bound));
      short_row_grid(c, e, rows, cols);
      c.scalar(double(rows)), c.scalar(double(cols)), c.scalar(1e-6f);
      cases.push_back(c);
    }
    {
      Case c = op_case("layer_norm" + at, row_kernel("layer_norm", e, cols));
      // An offset mean, so centring matters.
      auto x = random_floats(n, 1, 3), w = random_floats(cols, 0.5f, 1.5f), b = random_floats(cols, -0.5f, 0.5f);
      c.buffer("x", stored(e, x));
      c.buffer("w", stored(e, w));
      c.buffer("b", stored(e, b));
      Vec ref = oracle::layer_norm(widen(x), widen(w), widen(b), rows, cols, double(1e-5f));
      output(c, "out", e, n, row_scaled(e, ref, cols, e.bound));
      short_row_grid(c, e, rows, cols);
      c.scalar(double(rows)), c.scalar(double(cols)), c.scalar(1e-5f);
      cases.push_back(c);
    }
    {
      Case c = op_case("add_rms_norm" + at, "add_rms_norm<" + t + ">");
      auto x = random_floats(n, -2, 2), r = random_floats(n, -2, 2), w = random_floats(cols, 0.5f, 1.5f);
      c.buffer("x", stored(e, x));
      c.buffer("residual", stored(e, r));
      c.buffer("w", stored(e, w));
      Vec sum, out;
      // The op's definition: T(float(x) + float(residual)); the sum is then exact.
      oracle::add_rms_norm(widen(x), widen(r), widen(w), rows, cols, double(1e-6f),
                           [&](double v) { return round_to(e, v); }, sum, out);
      output(c, "sum", e, n, row_scaled(e, sum, cols, 0.0));
      output(c, "out", e, n, row_scaled(e, out, cols, e.bound));
      row_grid(c, rows);
      c.scalar(double(rows)), c.scalar(double(cols)), c.scalar(1e-6f);
      cases.push_back(c);
    }
    for (bool log : {false, true}) {
      Case c = op_case((log ? "log_softmax" : "softmax") + at, row_kernel(log ? "log_softmax" : "softmax", e, cols));
      auto x = random_floats(n, -8, 8);
      c.buffer("x", stored(e, x));
      Vec ref = log ? oracle::log_softmax(widen(x), rows, cols) : oracle::softmax(widen(x), rows, cols);
      output(c, "out", e, n, row_scaled(e, ref, cols, e.bound));
      short_row_grid(c, e, rows, cols);
      c.scalar(double(rows)), c.scalar(double(cols));
      cases.push_back(c);
    }
  }
}

// Element-wise ops: n % 4 == 3 (the one-by-one tail after the 4-wide chunks) and n == 1 (the
// tail alone); rows only group the error's scale.
constexpr RowShape kElementwiseShapes[] = {{7, 1001}, {1, 1}};

void elementwise_ops(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  for (RowShape s : kElementwiseShapes) {
    const size_t n = s.rows * s.cols;
    const std::string at = "_" + t + "_" + shape({s.rows, s.cols});
    {
      Case c = op_case("silu_gate" + at, "silu_gate<" + t + ">");
      auto x = random_floats(n, -8, 8), g = random_floats(n, -2, 2);
      c.buffer("x", stored(e, x));
      c.buffer("g", stored(e, g));
      output(c, "out", e, n, row_scaled(e, oracle::silu_gate(widen(x), widen(g)), s.cols, e.bound));
      stride_grid(c, (n + 3) / 4);   // 4 elements per thread
      c.scalar(double(n));
      cases.push_back(c);
    }
    for (bool mul : {false, true}) {   // kernels/decode.cpp: exact, float arithmetic then one rounding
      Case c = op_case((mul ? "mul" : "add") + at, (mul ? "mul<" : "add<") + t + ">");
      auto a = random_floats(n, -2, 2), b = random_floats(n, -2, 2);
      c.buffer("a", stored(e, a));
      c.buffer("b", stored(e, b));
      Vec ref = mul ? oracle::mul(widen(a), widen(b)) : oracle::add(widen(a), widen(b));
      for (double& v : ref) v = round_to(e, v);
      output(c, "out", e, n, row_scaled(e, ref, s.cols, 0.0));
      stride_grid(c, (n + 3) / 4);
      c.scalar(double(n));
      cases.push_back(c);
    }
    for (bool tanh_form : {false, true}) {
      Case c = op_case((tanh_form ? "gelu_tanh" : "gelu_erf") + at, (tanh_form ? "gelu_tanh<" : "gelu_erf<") + t + ">");
      auto x = random_floats(n, -6, 6);
      c.buffer("x", stored(e, x));
      Vec xd = widen(x), ref = tanh_form ? oracle::gelu_tanh(xd) : oracle::gelu_erf(xd);
      // Input-scaled: the scale of each row is its max |x| (gelu's error near 0 comes from
      // 1 + erf(x) cancelling, so it is proportional to |x|, not to |gelu(x)|).
      Vec scale(n);
      for (size_t r = 0; r < s.rows; ++r) {
        double m = 0;
        for (size_t i = r * s.cols; i < (r + 1) * s.cols; ++i) m = std::max(m, std::fabs(xd[i]));
        std::fill(scale.begin() + r * s.cols, scale.begin() + (r + 1) * s.cols, m);
      }
      output(c, "out", e, n, scaled(e, ref, scale, e.bound));
      stride_grid(c, (n + 3) / 4);
      c.scalar(double(n));
      cases.push_back(c);
    }
  }
}

void rope_and_embedding(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  struct RopeShape {
    size_t tokens, heads, head_dim, rotary_dim;
  };
  // One pair per thread (head_dim 2), 4 pairs per thread (64), 4 pairs with copied dimensions
  // past the rotary ones (96 / 64).
  for (RopeShape s : {RopeShape{1, 1, 2, 2}, RopeShape{7, 3, 64, 64}, RopeShape{5, 2, 96, 64}}) {
    for (bool gptj : {false, true}) {
      const size_t n = s.tokens * s.heads * s.head_dim;
      std::string at = "_" + t + "_" + shape({s.tokens, s.heads, s.head_dim}) +
                       (s.rotary_dim < s.head_dim ? "_rot" + std::to_string(s.rotary_dim) : "");
      Case c = op_case((gptj ? "rope_gptj" : "rope_neox") + at, (gptj ? "rope_gptj<" : "rope_neox<") + t + ">");
      auto x = random_floats(n, -2, 2);
      auto pos = random_ints<int32_t>(s.tokens, 0, 65535);   // angles up to 65535 rad
      std::vector<float> inv_freq(s.rotary_dim / 2);         // quiver::ops::rope_inv_freq, base 10000
      for (size_t i = 0; i < inv_freq.size(); ++i)
        inv_freq[i] = float(std::pow(10000.0, -2.0 * double(i) / double(s.rotary_dim)));
      c.buffer("x", stored(e, x));
      c.buffer("positions", bytes_of(pos));
      c.buffer("inv_freq", bytes_of(inv_freq));
      Vec ref = oracle::rope(widen(x), pos, inv_freq, s.tokens, s.heads, s.head_dim, gptj);
      output(c, "out", e, n, row_scaled(e, ref, s.head_dim, e.bound));
      bool wide = s.head_dim % 8 == 0 && inv_freq.size() % 4 == 0;   // as runtime/ops
      stride_grid(c, wide ? n / 8 : n / 2);
      for (size_t v : {s.tokens, s.heads, s.head_dim, inv_freq.size()}) c.scalar(double(v));
      cases.push_back(c);
    }
  }
  {
    const size_t tokens = 9, vocab = 300, dim = 301, n = tokens * dim;
    Case c = op_case("embedding_" + t + "_" + shape({tokens, vocab, dim}), "embedding<" + t + ">");
    auto table = random_floats(vocab * dim, -1, 1);
    auto ids = random_ints<int32_t>(tokens, 0, int32_t(vocab) - 1);
    ids[1] = -1;   // ids outside the table give zero rows
    ids[2] = int32_t(vocab);
    c.buffer("table", stored(e, table));
    c.buffer("ids", bytes_of(ids));
    output(c, "out", e, n, row_scaled(e, oracle::embedding(widen(table), ids, vocab, dim), dim, 0.0));   // exact
    stride_grid(c, n);
    c.scalar(double(tokens)), c.scalar(double(dim)), c.scalar(double(vocab));
    cases.push_back(c);
  }
}

constexpr size_t kMatvecRows = 4;   // kernels/matvec.cpp: output rows per block of matvec
constexpr size_t kQuantRows = 8;    // kernels/matvec.cpp: output rows per block of the quantized matvecs

void matvec(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  // cols not a multiple of 4 (scalar accesses) with rows not a multiple of 8; and wide accesses.
  for (RowShape s : {RowShape{7, 33}, RowShape{300, 1000}}) {
    Case c = op_case("matvec_" + t + "_" + shape({s.rows, s.cols}), "matvec<" + t + ">");
    auto w = random_floats(s.rows * s.cols, -1, 1), x = random_floats(s.cols, -1, 1);
    std::vector<uint8_t> w_bytes = stored(e, w);
    c.buffer("w", w_bytes);
    c.buffer("x", stored(e, x));
    Vec weight, ref = oracle::matvec(widen(w), widen(x), s.rows, s.cols, weight);
    output(c, "y", e, s.rows, scaled(e, ref, weight, gamma(s.cols) + e.rounding));
    row_grid(c, (s.rows + kMatvecRows - 1) / kMatvecRows);
    c.scalar(double(s.rows)), c.scalar(double(s.cols));
    cases.push_back(c);
    if (e.bytes == 2) {   // the same 16-bit weights with float x and y (matvec_w16<T>)
      Case cw = op_case("matvec_w16_" + t + "_" + shape({s.rows, s.cols}), "matvec_w16<" + t + ">");
      auto xf = random_floats(s.cols, -1, 1);
      cw.buffer("w", w_bytes);
      cw.buffer("x", bytes_of(xf));
      Vec weight_f, ref_f = oracle::matvec(widen(w), widen(xf), s.rows, s.cols, weight_f);
      output(cw, "y", kFloat, s.rows, scaled(kFloat, ref_f, weight_f, gamma(s.cols)));
      row_grid(cw, (s.rows + kMatvecRows - 1) / kMatvecRows);
      cw.scalar(double(s.rows)), cw.scalar(double(s.cols));
      cases.push_back(cw);
    }
  }
}

// Random llama.cpp blocks of block_elems elements, as the gate makes them: random bytes, then f16
// scales at byte offsets `halves` of both signs over a wide range (some subnormal, to cover every
// branch of the in-kernel f16 decoding).
std::vector<uint8_t> random_blocks(size_t rows, size_t cols, size_t block_elems, size_t block_bytes,
                                   std::initializer_list<size_t> halves) {
  std::vector<uint8_t> out(rows * (cols / block_elems) * block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<double> magnitude(-14, -4);   // scale 2^-14 .. 2^-4
  std::bernoulli_distribution subnormal(0.05), negative(0.3);
  for (uint8_t& b : out) b = uint8_t(byte(rng()));
  for (size_t b = 0; b < out.size(); b += block_bytes) {
    for (size_t at : halves) {
      uint16_t d = half_bits(float((negative(rng()) ? -1 : 1) * std::exp2(magnitude(rng()))));
      if (subnormal(rng())) d = uint16_t((d & 0x8000) | byte(rng()) | (byte(rng()) & 3) << 8);
      out[b + at] = uint8_t(d & 0xFF);
      out[b + at + 1] = uint8_t(d >> 8);
    }
  }
  return out;
}

void matvec_quantized(std::vector<Case>& cases) {
  struct Format {
    const char* kernel;
    size_t block_elems, block_bytes;
    std::initializer_list<size_t> halves;
  };
  for (const Format& f : {Format{"matvec_q8_0", 32, 34, {0}}, Format{"matvec_q4_0", 32, 18, {0}},
                          Format{"matvec_q4_k", 256, 144, {0, 2}}, Format{"matvec_q6_k", 256, 210, {208}}}) {
    bool k_quant = f.block_elems == 256;
    for (RowShape s : k_quant ? std::vector<RowShape>{{9, 768}, {257, 512}} : std::vector<RowShape>{{9, 96}, {257, 512}}) {
      Case c = op_case(std::string(f.kernel) + "_" + shape({s.rows, s.cols}), f.kernel);
      std::vector<uint8_t> w = random_blocks(s.rows, s.cols, f.block_elems, f.block_bytes, f.halves);
      auto x = random_floats(s.cols, -1, 1);
      c.buffer("w", w);
      c.buffer("scales", w);   // the same bytes, read as half (runtime/ops binds one buffer twice)
      c.buffer("x", bytes_of(x));
      Vec magnitude, weight;
      Vec wd = f.block_bytes == 34    ? oracle::dequantize_q8_0(w, s.rows, s.cols)
               : f.block_bytes == 18  ? oracle::dequantize_q4_0(w, s.rows, s.cols)
               : f.block_bytes == 144 ? oracle::dequantize_q4_k(w, s.rows, s.cols, magnitude)
                                      : oracle::dequantize_q6_k(w, s.rows, s.cols, magnitude);
      Vec ref = oracle::matvec(wd, widen(x), s.rows, s.cols, weight);
      // The gate's bounds: d * q is exact in float for q8_0 / q4_0; a K-quant weight is up to two
      // exact products, so 2 cols terms over the magnitudes (tests/ops/ops_gate_test.cpp).
      if (k_quant) oracle::matvec(magnitude, widen(x), s.rows, s.cols, weight);
      output(c, "y", kFloat, s.rows, scaled(kFloat, ref, weight, gamma(k_quant ? 2 * s.cols : s.cols)));
      row_grid(c, (s.rows + kQuantRows - 1) / kQuantRows);
      c.scalar(double(s.rows)), c.scalar(double(s.cols));
      cases.push_back(c);
    }
  }
}

struct MatShape {
  size_t m, n, k;
};
constexpr size_t kMatmulTile = 64;   // kernels/matmul.cpp: a block computes a 64 x 64 tile of c
void matmul_grid(Case& c, const MatShape& s) {
  c.grid[0] = uint32_t((s.n + kMatmulTile - 1) / kMatmulTile);
  c.grid[1] = uint32_t((s.m + kMatmulTile - 1) / kMatmulTile);
}

void matmul(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  // Partial tiles in m, n and k (k not a multiple of the 16-deep shared tile); one row, two
  // column tiles.
  for (MatShape s : {MatShape{17, 33, 65}, MatShape{100, 75, 300}, MatShape{1, 129, 257}}) {
    for (bool nt : {false, true}) {
      Case c = op_case(std::string(nt ? "matmul_nt_" : "matmul_nn_") + t + "_" + shape({s.m, s.n, s.k}),
                       std::string(nt ? "matmul_nt<" : "matmul_nn<") + t + ">");
      auto a = random_floats(s.m * s.k, -1, 1), b = random_floats(s.k * s.n, -1, 1);
      c.buffer("a", stored(e, a));
      c.buffer("b", stored(e, b));
      Vec weight, ref = oracle::matmul(widen(a), widen(b), s.m, s.n, s.k, nt, weight);
      output(c, "c", e, s.m * s.n, scaled(e, ref, weight, gamma(s.k) + e.rounding));
      matmul_grid(c, s);
      c.scalar(double(s.m)), c.scalar(double(s.n)), c.scalar(double(s.k));
      cases.push_back(c);
    }
  }
}

void matmul_w8a8(std::vector<Case>& cases) {
  // k not a multiple of the 4-byte packing; partial tiles with k past one shared tile.
  for (MatShape s : {MatShape{5, 70, 67}, MatShape{100, 75, 300}}) {
    Case c = op_case("matmul_w8a8_" + shape({s.m, s.n, s.k}), "matmul_w8a8");
    auto a = random_ints<int8_t>(s.m * s.k, -128, 127), b = random_ints<int8_t>(s.n * s.k, -128, 127);
    auto sa = random_floats(s.m, 1e-3f, 1e-1f), sb = random_floats(s.n, 1e-3f, 1e-1f);
    c.buffer("a", bytes_of(a));
    c.buffer("b", bytes_of(b));
    c.buffer("a_scale", bytes_of(sa));
    c.buffer("b_scale", bytes_of(sb));
    std::vector<float> ref = oracle::matmul_w8a8(a, b, sa, sb, s.m, s.n, s.k);
    output(c, "c", kFloat, s.m * s.n, row_scaled(kFloat, widen(ref), s.n, 0.0));   // bit for bit
    matmul_grid(c, s);
    c.scalar(double(s.m)), c.scalar(double(s.n)), c.scalar(double(s.k));
    cases.push_back(c);
  }
}

// The gate's attention bound (tests/ops/ops_gate_test.cpp, attention_bound(), which derives it),
// relative to max |v|.
double attention_bound(const oracle::AttentionRef& r, const oracle::AttentionCase& c, double out_rounding) {
  double sigma = gamma(c.head_dim + 2) * r.score_weight;
  double eps_p = 2 * sigma + 2 * r.max_abs_score * kU32 + 32 * kU32;
  return 2 * eps_p + 2 * gamma(c.kv_len + 2) + 2 * kU32 + out_rounding;
}

void attention(std::vector<Case>& cases, const Elem& e) {
  const std::string t = e.name;
  // batch, q_heads, kv_heads, q_len, kv_len, kv_capacity, head_dim, bshd, causal, (scale): the gate's.
  const oracle::AttentionCase shapes[] = {
      {1, 2, 2, 5, 5, 5, 64, false, false, 0},
      {2, 4, 2, 33, 100, 120, 64, true, true, 0},     // GQA, KV cache with spare capacity
      {1, 4, 1, 1, 77, 80, 128, false, true, 0},      // decode: one query, multi-query KV
      {1, 2, 2, 40, 40, 40, 128, false, true, 0},     // causal prefill
      {1, 3, 3, 20, 9, 9, 64, true, false, 0},        // more queries than keys (not causal)
  };
  for (oracle::AttentionCase s : shapes) {
    const size_t d = s.head_dim;
    const float scale = float(1.0 / std::sqrt(double(d)));   // runtime/ops: scale 0 means this
    s.scale = 1.0 / std::sqrt(double(d));
    std::string name = "attention_" + t + "_" + shape({s.batch, s.q_heads, s.kv_heads, s.q_len, s.kv_len, d}) +
                       (s.causal ? "_causal" : "") + (s.bshd ? "_bshd" : "");
    Case c = op_case(name, "attention<" + t + ", " + std::to_string(d) + ">");
    const size_t qn = s.batch * s.q_heads * s.q_len * d, kvn = s.batch * s.kv_heads * s.kv_capacity * d;
    auto q = random_floats(qn, -2, 2), k = random_floats(kvn, -2, 2), v = random_floats(kvn, -1, 1);
    std::vector<uint8_t> bq = stored(e, q), bk = stored(e, k), bv = stored(e, v);
    Vec qd = widen(q), kd = widen(k), vd = widen(v);
    // Spare capacity holds NaN: reading a position past kv_len poisons the output.
    const std::vector<uint8_t> nan = nan_bits(e, 1);
    for (size_t b = 0; b < s.batch; ++b)
      for (size_t g = 0; g < s.kv_heads; ++g)
        for (size_t j = s.kv_len; j < s.kv_capacity; ++j)
          for (size_t i = 0; i < d; ++i) {
            size_t at = s.bshd ? ((b * s.kv_capacity + j) * s.kv_heads + g) * d + i
                               : ((b * s.kv_heads + g) * s.kv_capacity + j) * d + i;
            std::memcpy(&bk[at * e.bytes], nan.data(), e.bytes);
            std::memcpy(&bv[at * e.bytes], nan.data(), e.bytes);
            kd[at] = vd[at] = NAN;
          }
    c.buffer("q", bq);
    c.buffer("k", bk);
    c.buffer("v", bv);
    oracle::AttentionRef ref = oracle::attention(qd, kd, vd, s);
    output(c, "o", e, qn, scaled(e, ref.o, Vec(qn, ref.max_abs_v), attention_bound(ref, s, e.rounding)));
    // runtime/ops/ops.cpp: strides for the layout, BQ = 2048 / D query rows per block.
    const size_t capacity = s.kv_capacity;
    const size_t rows_per_block = 2048 / d;
    c.grid[0] = uint32_t((s.q_len + rows_per_block - 1) / rows_per_block);
    c.grid[1] = uint32_t(s.q_heads);
    c.grid[2] = uint32_t(s.batch);
    for (size_t v : {s.q_heads, s.kv_heads, s.q_len, s.kv_len, s.bshd ? d : s.q_len * d, s.bshd ? s.q_heads * d : d,
                     s.bshd ? d : capacity * d, s.bshd ? s.kv_heads * d : d, s.kv_heads * capacity * d})
      c.scalar(double(v));
    c.scalar(scale);
    c.scalar(s.causal ? 1 : 0);
    cases.push_back(c);
  }
}

}  // namespace

std::vector<Case> make_op_cases() {
  std::vector<Case> cases;
  for (const Elem& e : kElems) {
    row_ops(cases, e);
    elementwise_ops(cases, e);
    rope_and_embedding(cases, e);
    matvec(cases, e);
    matmul(cases, e);
    attention(cases, e);
  }
  matvec_quantized(cases);
  matmul_w8a8(cases);
  return cases;
}

}  // namespace webcases
