// Writes the web test's cases (cases.h): for each kernel of the tests/kernels suite that WGSL can
// express, fresh random inputs, the launch (grid, arguments) and the host reference of every
// output, as one JSON file per case. case_runner.mjs runs each case through the JavaScript loader
// on a WebGPU device (outputs poisoned first) and compares: in Node (run_kernels.mjs) and in a
// browser (run_browser.mjs). The references are written here, independently of the kernels, in
// the manner of tests/kernels/kernels_test.cpp (whose references live inside gtest cases and
// cannot be called from here).
//
// Usage: quiver_web_cases <output dir> kernels|ops   (ops: the op library, op_cases.cpp)
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cases.h"
#include "int64_ref.h"
#include "int_ops_ref.h"

using namespace webcases;

namespace {

std::vector<Case> make_cases() {
  std::vector<Case> cases;
  {
    Case c{"saxpy", "saxpy"};
    const uint32_t n = 10007;
    auto x = random_floats(n, -10, 10), y = random_floats(n, -10, 10);
    float a = random_floats(1, -3, 3)[0];
    std::vector<float> ref(n);
    for (uint32_t i = 0; i < n; ++i) ref[i] = a * x[i] + y[i];
    c.grid[0] = blocks(n, 256);
    c.buffer("x", bytes_of(x));
    c.output("y", n * 4, near(ref, 1e-6, 1e-6), bytes_of(y));
    c.scalar(a);
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"block_sum", "block_sum"};
    const uint32_t n = 5000, nb = blocks(n, 256);
    auto in = random_floats(n, -1, 1);
    std::vector<float> ref(nb);
    for (uint32_t b = 0; b < nb; ++b) {
      double s = 0;
      for (uint32_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) s += in[i];
      ref[b] = float(s);
    }
    c.grid[0] = nb;
    c.buffer("in", bytes_of(in));
    c.output("partial", nb * 4, near(ref, 1e-5, 1e-5));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"two_shared_arrays", "two_shared_arrays"};
    const uint32_t n = 128 * 20;
    auto in = random_floats(n, -5, 5);
    std::vector<float> ref(n);
    for (uint32_t i = 0; i < n; ++i) ref[i] = in[i - i % 128 + 127 - i % 128] - 2.0f * in[i];
    c.grid[0] = n / 128;
    c.buffer("in", bytes_of(in));
    c.output("out", n * 4, exact(ref, "f32"));
    cases.push_back(c);
  }
  for (int as_int = 0; as_int < 2; ++as_int) {
    Case c{as_int ? "transpose_int32" : "transpose_float", as_int ? "transpose<int32_t, 16>" : "transpose<float, 16>"};
    const uint32_t rows = 333, cols = 517;
    std::vector<uint8_t> in = as_int ? bytes_of(random_ints<int32_t>(rows * cols, INT32_MIN, INT32_MAX))
                                     : bytes_of(random_floats(rows * cols, -100, 100));
    std::vector<uint8_t> ref(in.size());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t col = 0; col < cols; ++col) std::memcpy(&ref[(size_t(col) * rows + r) * 4], &in[(size_t(r) * cols + col) * 4], 4);
    c.grid[0] = blocks(cols, 16);
    c.grid[1] = blocks(rows, 16);
    c.buffer("in", in);
    Check ck;
    ck.expect = ref;
    c.output("out", ref.size(), ck);
    c.scalar(rows);
    c.scalar(cols);
    cases.push_back(c);
  }
  {
    Case c{"mandelbrot", "mandelbrot"};
    const uint32_t w = 301, h = 203, max_iter = 200;
    float x0 = -2.2f + random_floats(1, -0.05f, 0.05f)[0], y0 = -1.2f, step = 3.0f / w;
    std::vector<uint32_t> ref(size_t(w) * h);
    for (uint32_t py = 0; py < h; ++py)
      for (uint32_t px = 0; px < w; ++px) {
        float cr = x0 + step * float(px), ci = y0 + step * float(py), zr = 0, zi = 0;
        uint32_t k = 0;
        for (; k < max_iter; ++k) {
          float zr2 = zr * zr, zi2 = zi * zi;
          if (zr2 + zi2 > 4.0f) break;
          zi = 2.0f * zr * zi + ci;
          zr = zr2 - zi2 + cr;
        }
        ref[size_t(py) * w + px] = k;
      }
    // Boundary points are chaotic (a contracted fma escapes a step earlier or later): all but a
    // sliver must match, as in tests/kernels.
    Check ck = exact(ref);
    ck.max_mismatch_fraction = 1.0 / 200;
    c.grid[0] = blocks(w, 16);
    c.grid[1] = blocks(h, 16);
    c.output("iters", ref.size() * 4, ck);
    for (double v : {double(w), double(h), double(x0), double(y0), double(step), double(max_iter)}) c.scalar(v);
    cases.push_back(c);
  }
  {
    Case c{"dot4", "dot4"};
    const uint32_t n = 4099;
    auto a = random_ints<uint32_t>(n, 0, UINT32_MAX), b = random_ints<uint32_t>(n, 0, UINT32_MAX);
    auto acc = random_ints<int32_t>(n, INT32_MIN, INT32_MAX);
    std::vector<int32_t> ref(n);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t s = uint32_t(acc[i]);
      for (int k = 0; k < 4; ++k) s += uint32_t(int32_t(int8_t(a[i] >> (8 * k))) * int32_t(int8_t(b[i] >> (8 * k))));
      ref[i] = int32_t(s);
    }
    c.grid[0] = blocks(n, 64);
    c.buffer("a", bytes_of(a));
    c.buffer("b", bytes_of(b));
    c.buffer("acc", bytes_of(acc));
    c.output("out", n * 4, exact(ref));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"histogram", "histogram"};
    const uint32_t n = 20003;
    auto values = random_ints<uint32_t>(n, 0, 5000000);
    std::vector<uint32_t> bins(64, 0);
    int32_t rmax = INT32_MIN, rmin = INT32_MAX;
    uint32_t rumax = 0;
    double rsum = 0;
    for (uint32_t v : values) {
      bins[v % 64]++;
      rmax = std::max(rmax, int32_t(v) - 1000000);
      rmin = std::min(rmin, int32_t(v) - 1000000);
      rumax = std::max(rumax, v);
      rsum += v % 16;
    }
    c.grid[0] = blocks(n, 256);
    c.buffer("values", bytes_of(values));
    c.scalar(n);
    c.output("bins", 256, exact(bins), bytes_of(std::vector<uint32_t>(64, 0)));
    c.output("imax", 4, exact(std::vector<int32_t>{rmax}), bytes_of(std::vector<int32_t>{INT32_MIN}));
    c.output("imin", 4, exact(std::vector<int32_t>{rmin}), bytes_of(std::vector<int32_t>{INT32_MAX}));
    c.output("fsum", 4, exact(std::vector<float>{float(rsum)}, "f32"), bytes_of(std::vector<float>{0.0f}));
    c.output("umax", 4, exact(std::vector<uint32_t>{rumax}), bytes_of(std::vector<uint32_t>{0}));
    cases.push_back(c);
  }
  {
    Case c{"tickets", "tickets"};
    const uint32_t n = 5000;
    std::vector<int32_t> init(n), ref(n);
    auto base = random_ints<int32_t>(1, -1000, 1000)[0];
    for (uint32_t i = 0; i < n; ++i) init[i] = base + int32_t(i) * 3, ref[i] = init[i] + 1;
    c.grid[0] = blocks(n, 128);
    c.output("counter", 4, exact(std::vector<uint32_t>{n}), bytes_of(std::vector<uint32_t>{0}));
    Check perm;
    perm.kind = "permutation";   // every thread got exactly one ticket
    c.output("order", n * 4, perm);
    Check slots;
    slots.kind = "pair_slots";   // slot p holds 2p or 2p + 1: the first of the pair won
    c.output("slots", n / 2 * 4, slots, bytes_of(std::vector<uint32_t>(n / 2, 0xFFFFFFFFu)));
    c.output("swapped", n * 4, exact(ref), bytes_of(init));   // exchange returned the old value
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"math_sweep", "math_sweep"};
    std::vector<float> x;
    uint32_t k = 0;
    for (float v = -20.0f; v <= 20.0f; v = std::nextafter(v, 100.0f))
      if (k++ % 40009 == 0) x.push_back(v);
    auto extra = random_floats(20000, -20, 20);
    x.insert(x.end(), extra.begin(), extra.end());
    const uint32_t n = uint32_t(x.size());
    // Each function's reference for x, and for x with its subnormal values flushed to zero (WGSL
    // lets an implementation flush them; SwiftShader does).
    enum { kExp, kTanh, kErf, kRsqrt, kExp2, kRcp, kFunctions };
    auto references = [n](const std::vector<float>& in) {
      std::vector<std::vector<float>> r(kFunctions, std::vector<float>(n));
      for (uint32_t i = 0; i < n; ++i) {
        double v = in[i];
        r[kExp][i] = float(std::exp(v)), r[kTanh][i] = float(std::tanh(v)), r[kErf][i] = float(std::erf(v));
        r[kRsqrt][i] = float(1.0 / std::sqrt(std::fabs(v) + double(1e-30f)));
        r[kExp2][i] = float(std::exp2(v));
        r[kRcp][i] = float(1.0 / double(std::fabs(in[i]) + 1e-30f));
      }
      return r;
    };
    std::vector<float> flushed = x;
    for (float& v : flushed)
      if (std::fpclassify(v) == FP_SUBNORMAL) v = std::copysign(0.0f, v);
    const auto ref = references(x), ref_flushed = references(flushed);
    // The bounds of tests/kernels (KERNEL_LANGUAGE.md: exp and tanh within 2 ulp; docs/numerics.md).
    auto ulp = [&](int f, double u) {
      Check ck = exact(ref[f], "ulp");
      ck.ulp = u;
      ck.expect_flushed = bytes_of(ref_flushed[f]);
      return ck;
    };
    c.grid[0] = blocks(n, 256);
    c.buffer("x", bytes_of(x));
    c.output("exp", n * 4, ulp(kExp, 2.5));
    c.output("tanh", n * 4, ulp(kTanh, 2.5));
    c.output("erf", n * 4, ulp(kErf, 8.5));
    c.output("rsqrt", n * 4, ulp(kRsqrt, 2.5));
    c.output("exp2", n * 4, ulp(kExp2, 2.5));
    c.output("exp2_ftz", n * 4, ulp(kExp2, 2.5));   // [-20, 20]: normal results, exp2's bound
    c.output("rcp", n * 4, ulp(kRcp, 2.5));         // WGSL's division: 2.5 ulp
    c.scalar(n);
    cases.push_back(c);
  }
  {
    // Run with the image's subgroup-free unit (subgroups of one invocation): the only one a
    // device without WebGPU's `subgroups` feature (Mesa llvmpipe through Dawn) can run.
    Case c{"subgroup_ops_size1", "subgroup_ops"};
    const uint32_t n = 128 * 16;
    auto x = random_floats(n, -10, 10);
    auto v = random_ints<int32_t>(n, -1000000, 1000000);
    c.grid[0] = n / 128;
    c.buffer("x", bytes_of(x));
    c.buffer("v", bytes_of(v));
    for (const char* name : {"fsum", "fmax"}) c.output(name, n * 4, exact(x, "f32"));
    c.output("imin", n * 4, exact(v));
    c.output("umax", n * 4, exact(v));
    for (const char* name : {"rotated", "xored", "first"}) c.output(name, n * 4, exact(x, "f32"));
    c.output("sizes", n * 4, exact(std::vector<uint32_t>(n, 1)));
    cases.push_back(c);
  }
  {
    Case c{"block_reductions", "block_reductions"};
    const uint32_t nb = 40, n = nb * 256;
    auto x = random_floats(n, -1, 1);
    auto v = random_ints<int32_t>(n, -100000, 100000);
    std::vector<float> sums(nb), maxes(nb);
    std::vector<int32_t> isums(nb);
    for (uint32_t b = 0; b < nb; ++b) {
      double s = 0;
      float m = -INFINITY;
      int32_t is = 0;
      for (uint32_t i = b * 256; i < (b + 1) * 256; ++i) s += x[i], m = std::max(m, x[i]), is += v[i];
      sums[b] = float(s), maxes[b] = m, isums[b] = is;
    }
    c.grid[0] = nb;
    c.buffer("x", bytes_of(x));
    c.buffer("v", bytes_of(v));
    c.output("sums", nb * 4, near(sums, 1e-5, 1e-5));
    c.output("maxes", nb * 4, exact(maxes, "f32"));
    c.output("isums", nb * 4, exact(isums));
    cases.push_back(c);
  }
  {
    Case c{"convert_16bit", "convert_16bit"};
    std::vector<float> in = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 1e10f, -1e10f,
                             INFINITY, -INFINITY, NAN, 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                             std::numeric_limits<float>::max()};
    std::uniform_int_distribution<uint32_t> bits16(0, 0xffff);
    auto uni = random_floats(6000, -70000, 70000), expo = random_floats(6000, -30, 17);
    for (size_t i = 0; in.size() < 12000; ++i) {
      switch (i % 4) {
        case 0: in.push_back(uni[i / 2]); break;
        case 1: in.push_back((i & 8 ? -1.0f : 1.0f) * std::exp2(expo[i / 2])); break;
        case 2: {   // a half tie, or just off it
          uint16_t h = bits16(rng()) & 0x7bff;
          float mid = (half_value(h) + half_value(h + 1)) / 2;
          in.push_back(i & 16 ? std::nextafter(mid, 0.0f) : mid);
          break;
        }
        default: {   // a bf16 tie
          uint32_t u = (std::uniform_int_distribution<uint32_t>(0x00800000u, 0x7f7fffffu)(rng()) & 0xffff0000u) | 0x8000u;
          in.push_back(std::bit_cast<float>(u | (i & 32 ? 0x80000000u : 0u)));
        }
      }
    }
    const uint32_t n = uint32_t(in.size());
    std::vector<uint16_t> h(n), b(n);
    std::vector<float> hb(n), bb(n);
    for (uint32_t i = 0; i < n; ++i) h[i] = half_bits(in[i]), b[i] = bf16_bits(in[i]), hb[i] = half_value(h[i]), bb[i] = bf16_value(b[i]);
    c.grid[0] = blocks(n, 128);
    c.buffer("in", bytes_of(in));
    c.output("h", n * 2, exact(h, "f16"));
    c.output("b", n * 2, exact(b, "bf16"));
    c.output("h_back", n * 4, exact(hb, "f32"));
    c.output("b_back", n * 4, exact(bb, "f32"));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"widen_16bit", "widen_16bit"};
    const uint32_t n = 65536;
    std::vector<uint16_t> all(n);
    std::vector<float> fh(n), fb(n);
    for (uint32_t i = 0; i < n; ++i) all[i] = uint16_t(i), fh[i] = half_value(uint16_t(i)), fb[i] = bf16_value(uint16_t(i));
    c.grid[0] = blocks(n, 256);
    c.buffer("h", bytes_of(all));
    c.buffer("b", bytes_of(all));
    c.output("from_h", n * 4, exact(fh, "f32"));
    c.output("from_b", n * 4, exact(fb, "f32"));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"scale_half", "scale_half"};
    const uint32_t n = 3001;   // odd: the last 16-bit element shares its word with nothing
    auto xf = random_floats(n, -300, 300);
    std::vector<uint16_t> x(n), ref(n);
    uint16_t s = half_bits(random_floats(1, -4, 4)[0]);
    for (uint32_t i = 0; i < n; ++i) x[i] = half_bits(xf[i]), ref[i] = half_bits(half_value(x[i]) * half_value(s));
    c.grid[0] = blocks(n, 64);
    c.output("y", n * 2, exact(ref, "f16"));
    c.buffer("x", bytes_of(x));
    c.half_scalar(s);
    c.scalar(n);
    cases.push_back(c);
  }
  {
    // Vectors every way the language allows (tests/kernels/half_vec.cpp); the last block is
    // partial, so threads past n put zeros in the shared tile.
    Case c{"vec_mix", "vec_mix"};
    const uint32_t n = 64 * 30 + 17, nb = blocks(n, 64);
    auto a = random_floats(size_t(n) * 4, -4, 4), b = random_floats(size_t(n) * 4, -4, 4);
    auto hf = random_floats(size_t(n) * 8, -100, 100);
    std::vector<uint16_t> h(hf.size());
    for (size_t j = 0; j < h.size(); ++j) h[j] = half_bits(hf[j]);
    auto k = random_ints<int32_t>(size_t(n) * 4, -1000000, 1000000);
    std::vector<float> out(size_t(n) * 4), out8(size_t(n) * 8);
    std::vector<uint16_t> out_b(size_t(n) * 8);
    std::vector<int32_t> out_k(size_t(n) * 4);
    const float div[4] = {1, 2, 4, 8};
    const int32_t sub[4] = {1, -2, 3, -4};
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t t = i % 64, o = i - t + (t + 1) % 64;
      float r[4];
      for (int j = 0; j < 4; ++j) {
        float other = o < n ? a[size_t(o) * 4 + j] * 2.0f : 0.0f;
        r[j] = ((a[size_t(i) * 4 + j] + b[size_t(i) * 4 + j]) * other - 1.0f) / div[j];
      }
      r[2] = r[2] + a[size_t(i) * 4];
      for (int j = 0; j < 4; ++j) out[size_t(i) * 4 + j] = -r[j];
      for (int j = 0; j < 8; ++j) {
        float f = half_value(h[size_t(i) * 8 + j]);
        f = f * f + 0.5f;   // the square of a half is exact in float: one rounding, fused or not
        out8[size_t(i) * 8 + j] = f;
        out_b[size_t(i) * 8 + j] = bf16_bits(f);
      }
      for (int j = 0; j < 4; ++j) {
        int32_t kv = k[size_t(i) * 4 + j];
        out_k[size_t(i) * 4 + j] = kv / 3 + 2 * kv - sub[j];
      }
    }
    c.grid[0] = nb;
    c.buffer("a", bytes_of(a));
    c.buffer("b", bytes_of(b));
    c.buffer("h", bytes_of(h));
    c.buffer("k", bytes_of(k));
    c.output("out", out.size() * 4, near(out, 1e-6, 2e-5));   // (a + b) * other - 1 may be one fma (|product| < 64)
    c.output("out8", out8.size() * 4, exact(out8, "f32"));
    c.output("out_b", out_b.size() * 2, exact(out_b, "bf16"));
    c.output("out_k", out_k.size() * 4, exact(out_k));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    Case c{"float4_copy", "float4_copy"};
    const uint32_t n4 = 1001;
    auto in = random_floats(n4 * 4, -1e6f, 1e6f);
    c.grid[0] = blocks(n4, 256);
    c.buffer("in", bytes_of(in));
    c.output("out", n4 * 16, exact(in, "f32"));
    c.scalar(n4);
    cases.push_back(c);
  }
  {
    Case c{"int_ops", "int_ops"};
    const uint32_t n = 20000;
    auto a = random_ints<int32_t>(n, INT32_MIN, INT32_MAX);
    auto b = random_ints<uint32_t>(n, 0, 100000);
    std::vector<int32_t> out(n);
    std::vector<int64_t> wide(n);
    for (uint32_t i = 0; i < n; ++i) out[i] = int_ops_ref::out(a[i], b[i]), wide[i] = int_ops_ref::wide(a[i], b[i]);
    c.grid[0] = blocks(n, 128);
    c.buffer("a", bytes_of(a));
    c.buffer("b", bytes_of(b));
    c.output("out", n * 4, exact(out));
    c.output("wide", n * 8, exact(wide));
    c.scalar(n);
    cases.push_back(c);
  }
  {
    // Every 64-bit operation WGSL emulates (compiler/targets/wgsl/wgsl_int64.cpp).
    Case c{"int64_ops", "int64_ops"};
    const uint32_t n = 3000;
    auto a = int64_ref::inputs(n, rng()), b = int64_ref::inputs(n, rng());
    int64_ref::fix_divisors(a, b);
    auto f = int64_ref::floats(n, rng());
    int64_t k = int64_ref::inputs(1, rng())[0];
    std::vector<int64_t> out(16 * size_t(n));
    std::vector<float> fout(2 * size_t(n));
    for (uint32_t i = 0; i < n; ++i) {
      int64_ref::Result r = int64_ref::compute(a[i], b[i], f[i], k, i);
      std::copy(r.out.begin(), r.out.end(), out.begin() + 16 * size_t(i));
      fout[2 * size_t(i)] = r.f[0], fout[2 * size_t(i) + 1] = r.f[1];
    }
    c.grid[0] = blocks(n, 64);
    c.buffer("a", bytes_of(a));
    c.buffer("b", bytes_of(b));
    c.buffer("f", bytes_of(f));
    c.output("out", out.size() * 8, exact(out));
    c.output("fout", fout.size() * 4, exact(fout, "f32"));
    c.int64_scalar(k);
    c.scalar(n);
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[2]) != "kernels" && std::string(argv[2]) != "ops")) {
    std::fprintf(stderr, "usage: quiver_web_cases <output dir> kernels|ops\n");
    return 2;
  }
  std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") std::filesystem::remove(entry.path());
  auto cases = std::string(argv[2]) == "ops" ? make_op_cases() : make_cases();
  for (const Case& c : cases) write_case(dir, c);
  std::printf("quiver_web_cases: %zu cases in %s\n", cases.size(), dir.c_str());
  return 0;
}
