// Accuracy of quiver::ir::lower_math, measured through the CPU target (the same lowered IR
// feeds every target): max error in ulp over a sweep of each op's domain against a long double
// reference, printed, and bounded at generous documented levels. Also special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>

#include "targets_cpu_harness.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_cpu_target();
}

namespace quiver::test {
namespace {

struct OpCase {
  const char* op;
  bool binary;
  long double (*ref)(long double, long double);
  double lo, hi;        // sweep domain (x); binary ops: y in [ylo, yhi]
  bool log_scale;       // sample |x| log-uniformly in [lo, hi]
  double ylo, yhi;
  double max_ulp_f32;   // the documented bounds
  double max_ulp_f64;
};

// Bounds: f32 exp, log, log2, tanh, erf are MLIR's polynomial approximations (exp2 and pow
// are quiver's, built on them); sin/cos and every f64 op are quiver's own
// (compiler/ir/math_f64.cpp). pow's error grows with
// |y log x| because exp amplifies the rounding of y*log(x). f64 erf sums a series of up to
// ~60 terms below |x| = 3 (see emit_erf_f64).
const OpCase kCases[] = {
    {"exp", false, [](long double x, long double) { return expl(x); }, -87.0, 88.0, false, 0, 0, 4, 4},
    {"exp2", false, [](long double x, long double) { return exp2l(x); }, -125.0, 127.0, false, 0, 0, 4, 4},
    {"log", false, [](long double x, long double) { return logl(x); }, 1e-30, 1e30, true, 0, 0, 4, 4},
    {"log2", false, [](long double x, long double) { return log2l(x); }, 1e-30, 1e30, true, 0, 0, 4, 4},
    {"sin", false, [](long double x, long double) { return sinl(x); }, -100.0, 100.0, false, 0, 0, 4, 4},
    {"cos", false, [](long double x, long double) { return cosl(x); }, -100.0, 100.0, false, 0, 0, 4, 4},
    {"tanh", false, [](long double x, long double) { return tanhl(x); }, -10.0, 10.0, false, 0, 0, 8, 4},
    {"erf", false, [](long double x, long double) { return erfl(x); }, -5.0, 5.0, false, 0, 0, 8, 32},
    {"powf", true, [](long double x, long double y) { return powl(x, y); }, 0.01, 100.0, true, -8.0, 8.0, 64, 64},
};

std::string ir_for(const char* op, bool binary, const char* type, int index) {
  std::string t = type;
  std::string m = "memref<?x" + t + ">";
  std::string s = "  func.func @qv_k" + std::to_string(index) + "_" + op + "_" + t + "(%x: " + m +
                  ", %z: " + m + ", %y: " + m + ", %n: i32) attributes {qv.kernel, qv.block = array<i32: 256, 1, 1>} {\n";
  s += R"(    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %bdim = gpu.block_dim x
    %t0 = arith.muli %bid, %bdim : index
    %i = arith.addi %t0, %tid : index
    %n_idx = arith.index_castui %n : i32 to index
    %in = arith.cmpi ult, %i, %n_idx : index
    scf.if %in {
)";
  s += "      %v = memref.load %x[%i] : " + m + "\n";
  s += "      %w = memref.load %z[%i] : " + m + "\n";
  if (binary)
    s += "      %r = math." + std::string(op) + " %v, %w : " + t + "\n";
  else
    s += "      %r = math." + std::string(op) + " %v : " + t + "\n";
  s += "      memref.store %r, %y[%i] : " + m + "\n    }\n    return\n  }\n";
  return s;
}

// One module holding every op for both types, compiled once.
struct MathImage {
  ParsedIR parsed;
  std::vector<compiler::TargetImage> images;
  std::unique_ptr<LoadedCpuImage> so;
  std::map<std::string, format::Kernel> kernels;   // by "<op>_<type>"
};

MathImage& math_image() {
  static MathImage* image = [] {
    auto* m = new MathImage;
    std::string ir = "module {\n";
    int index = 0;
    for (const OpCase& c : kCases)
      for (const char* t : {"f32", "f64"}) ir += ir_for(c.op, c.binary, t, index++);
    ir += "}\n";
    m->parsed = parse_ir(ir);
    auto target = compiler::create_cpu_target();
    m->images = target->compile(*m->parsed.module, m->parsed.kernels, {});
    m->so = std::make_unique<LoadedCpuImage>(m->images.at(0).data);
    for (const auto& k : m->parsed.kernels) m->kernels[k.symbol.substr(k.symbol.find('_', 4) + 1)] = k;
    return m;
  }();
  return *image;
}

template <typename T>
std::vector<T> run_op(const std::string& op, const std::vector<T>& x, const std::vector<T>& z) {
  MathImage& img = math_image();
  std::string key = op + (sizeof(T) == 4 ? "_f32" : "_f64");
  const format::Kernel& k = img.kernels.at(key);
  int32_t n = static_cast<int32_t>(x.size());
  std::vector<T> y(x.size() + 1, std::numeric_limits<T>::quiet_NaN());
  y.back() = T(12345);   // must survive
  void* xp = const_cast<T*>(x.data());
  void* zp = const_cast<T*>(z.data());
  void* yp = y.data();
  run_cpu_kernel(img.so->symbol(k.symbol), k, {(static_cast<uint32_t>(n) + 255) / 256, 1, 1}, {&xp, &zp, &yp, &n});
  EXPECT_EQ(y.back(), T(12345)) << op << " wrote past n";
  y.pop_back();
  return y;
}

template <typename T>
double ulp_error(T got, long double exact) {
  constexpr int mant = std::numeric_limits<T>::digits - 1;
  constexpr int min_exp = std::numeric_limits<T>::min_exponent - 1;
  if (std::isnan(exact)) return std::isnan(got) ? 0.0 : INFINITY;
  T rounded = static_cast<T>(exact);
  if (std::isinf(rounded)) return got == rounded ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  int e = 0;
  frexpl(exact, &e);
  int ulp_exp = std::max(e - 1, min_exp) - mant;
  return static_cast<double>(fabsl(static_cast<long double>(got) - exact) / ldexpl(1.0L, ulp_exp));
}

template <typename T>
void sweep(const OpCase& c, double bound) {
  std::mt19937_64 rng(2024);
  const size_t n = 100000;
  std::vector<T> x(n), z(n);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (size_t i = 0; i < n; ++i) {
    double f = i < n / 2 ? static_cast<double>(i) / (n / 2 - 1) : u(rng);   // grid, then random
    double v = c.log_scale ? std::exp(std::log(c.lo) + f * (std::log(c.hi) - std::log(c.lo)))
                           : c.lo + f * (c.hi - c.lo);
    x[i] = static_cast<T>(v);
    z[i] = static_cast<T>(c.ylo + u(rng) * (c.yhi - c.ylo));
  }
  std::vector<T> y = run_op<T>(c.op, x, z);
  double worst = 0;
  T worst_x = 0, worst_z = 0;
  for (size_t i = 0; i < n; ++i) {
    double err = ulp_error<T>(y[i], c.ref(x[i], z[i]));
    if (!(err <= worst)) {
      worst = err;
      worst_x = x[i];
      worst_z = z[i];
    }
  }
  std::printf("  %-5s %s: max %.2f ulp (at x=%.9g%s%.9g) over [%g, %g], bound %.0f\n", c.op,
              sizeof(T) == 4 ? "f32" : "f64", worst, static_cast<double>(worst_x),
              c.binary ? ", y=" : "", c.binary ? static_cast<double>(worst_z) : 0.0, c.lo, c.hi, bound);
  EXPECT_LE(worst, bound) << c.op << (sizeof(T) == 4 ? " f32" : " f64") << " at x=" << worst_x;
}

TEST(TargetsCpuMath, AccuracyF32) {
  for (const OpCase& c : kCases) sweep<float>(c, c.max_ulp_f32);
}

TEST(TargetsCpuMath, AccuracyF64) {
  for (const OpCase& c : kCases) sweep<double>(c, c.max_ulp_f64);
}

template <typename T>
void check_special(const std::string& op, std::vector<std::pair<T, T>> xz, std::vector<T> expect) {
  std::vector<T> x, z;
  for (auto& [a, b] : xz) {
    x.push_back(a);
    z.push_back(b);
  }
  std::vector<T> y = run_op<T>(op, x, z);
  for (size_t i = 0; i < y.size(); ++i) {
    // Exact for NaN, infinities, zeros (with sign) and exactly representable results of
    // exp2/log2; pow's finite results carry its documented error (compared within 1e-5).
    bool exact_kind = std::isnan(expect[i]) || std::isinf(expect[i]) || expect[i] == 0 || op != "powf";
    bool same = exact_kind ? ((std::isnan(y[i]) && std::isnan(expect[i])) ||
                              (y[i] == expect[i] && std::signbit(y[i]) == std::signbit(expect[i])))
                           : (std::fabs(y[i] - expect[i]) <= 1e-5 * std::fabs(expect[i]));
    EXPECT_TRUE(same) << op << "(" << x[i] << ", " << z[i] << ") = " << y[i] << ", expected " << expect[i];
  }
}

template <typename T>
void special_values() {
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  check_special<T>("exp", {{nan, 0}, {inf, 0}, {-inf, 0}, {0, 0}, {T(1000), 0}, {T(-1000), 0}},
                   {nan, inf, 0, 1, inf, 0});
  check_special<T>("exp2", {{nan, 0}, {inf, 0}, {-inf, 0}, {0, 0}, {T(10), 0}, {T(-3), 0}},
                   {nan, inf, 0, 1, 1024, T(0.125)});
  check_special<T>("log", {{nan, 0}, {inf, 0}, {0, 0}, {T(-1), 0}, {1, 0}},
                   {nan, inf, -inf, nan, 0});
  check_special<T>("log2", {{nan, 0}, {inf, 0}, {0, 0}, {T(-1), 0}, {1, 0}, {T(1024), 0}},
                   {nan, inf, -inf, nan, 0, 10});
  check_special<T>("tanh", {{nan, 0}, {inf, 0}, {-inf, 0}, {0, 0}, {T(50), 0}},
                   {nan, 1, -1, 0, 1});
  check_special<T>("erf", {{nan, 0}, {inf, 0}, {-inf, 0}, {0, 0}, {T(10), 0}},
                   {nan, 1, -1, 0, 1});
  check_special<T>("sin", {{nan, 0}, {inf, 0}, {0, 0}}, {nan, nan, 0});
  check_special<T>("cos", {{nan, 0}, {-inf, 0}, {0, 0}}, {nan, nan, 1});
  check_special<T>("powf",
                   {{2, 10}, {T(-2), 3}, {T(-2), 2}, {T(-2), T(0.5)}, {0, T(-1)}, {0, 2},
                    {nan, 0}, {1, nan}, {T(-0.0), 3}, {T(-0.0), T(-3)}, {T(-1), inf}, {4, T(0.5)}},
                   {1024, T(-8), 4, nan, inf, 0, 1, 1, T(-0.0), -inf, 1, 2});
}

TEST(TargetsCpuMath, SpecialValuesF32) { special_values<float>(); }
TEST(TargetsCpuMath, SpecialValuesF64) { special_values<double>(); }

}  // namespace
}  // namespace quiver::test
