// Infrastructure of the op library's numeric gate (tests/ops): host element types and their
// exact conversions, seeded random inputs, poisoned outputs, error metrics, and the report of
// measured errors written as JSON for scripts/numerics-table.py.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <initializer_list>
#include <quiver/ops.h>
#include <quiver/runtime.h>

namespace gate {

// ---- The device under test ------------------------------------------------------------------
quiver::Device& device();   // QUIVER_BACKEND chooses it, as everywhere
std::mt19937_64& rng();     // seeded once from QUIVER_OPS_SEED or the clock; the seed is printed
uint64_t seed();
// Extra-large shapes (the sizes inference uses) only when QUIVER_OPS_BIG=1.
bool big_shapes();

// ---- Host element types -----------------------------------------------------------------------
// Round-to-nearest-even conversions written here from the IEEE formats (independent of the
// kernels and of the compiler's conversions); to_double is exact.
uint16_t bf16_bits(double v);
uint16_t half_bits(double v);
double bf16_value(uint16_t bits);
double half_value(uint16_t bits);

template <typename T> struct Dtype;
template <> struct Dtype<float> {
  static constexpr const char* name = "f32";
  static constexpr double unit_roundoff = 0x1p-24;   // relative error of round to nearest
  static float from(double v) { return static_cast<float>(v); }
  static double value(float v) { return v; }
  static float poison() { return std::numeric_limits<float>::quiet_NaN(); }
};
template <> struct Dtype<quiver::bf16> {
  static constexpr const char* name = "bf16";
  static constexpr double unit_roundoff = 0x1p-8;
  static quiver::bf16 from(double v) { return quiver::bf16{bf16_bits(v)}; }
  static double value(quiver::bf16 v) { return bf16_value(v.bits); }
  static quiver::bf16 poison() { return quiver::bf16{0x7FC1}; }   // NaN
};
template <> struct Dtype<quiver::half> {
  static constexpr const char* name = "f16";
  static constexpr double unit_roundoff = 0x1p-11;
  static quiver::half from(double v) { return quiver::half{half_bits(v)}; }
  static double value(quiver::half v) { return half_value(v.bits); }
  static quiver::half poison() { return quiver::half{0x7E01}; }   // NaN
};

// Random values uniform in [lo, hi), rounded to T; `exact` receives their exact values.
template <typename T>
std::vector<T> random_values(size_t n, double lo, double hi, std::vector<double>& exact) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  exact.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = Dtype<T>::from(d(rng()));
    exact[i] = Dtype<T>::value(v[i]);
  }
  return v;
}
template <typename T>
std::vector<double> values(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = Dtype<T>::value(v[i]);
  return out;
}

template <typename T>
quiver::Buffer<T> upload(const std::vector<T>& host) {
  quiver::Buffer<T> b = device().alloc<T>(host.size());
  b.upload(host);
  return b;
}
// An output buffer filled with NaN (floats) or 0xA5 bytes (others): an element the op does not
// write fails the comparison.
template <typename T>
std::vector<T> poison_values(size_t n) {
  std::vector<T> p(n);
  if constexpr (std::is_integral_v<T>) {
    std::memset(p.data(), 0xA5, n * sizeof(T));
  } else {
    for (T& x : p) x = Dtype<T>::poison();
  }
  return p;
}
template <typename T>
quiver::Buffer<T> poisoned(size_t n) {
  return upload(poison_values<T>(n));
}
template <typename T>
std::vector<T> download(const quiver::Buffer<T>& b) {
  std::vector<T> v(b.size());
  b.download(v);
  return v;
}

constexpr double kU32 = 0x1p-24;   // float unit roundoff
constexpr size_t kGuard = 7;       // poisoned elements after every output
// The classic bound n u / (1 - n u) of an n-term float sum's relative error.
inline double gamma(size_t n) { return double(n) * kU32 / (1 - double(n) * kU32); }

// A poisoned output of n elements plus the guard.
template <typename T>
struct Output {
  explicit Output(size_t n) : n(n), buffer(poisoned<T>(n + kGuard)) {}
  // The first n elements; fails the test if a guard element changed.
  std::vector<T> raw() const {
    std::vector<T> all = download(buffer);
    std::vector<T> poison = poison_values<T>(kGuard);
    EXPECT_EQ(0, std::memcmp(all.data() + n, poison.data(), kGuard * sizeof(T)))
        << "the op wrote past the " << n << " elements of its output";
    all.resize(n);
    return all;
  }
  std::vector<double> read() const { return values(raw()); }
  size_t n;
  quiver::Buffer<T> buffer;
};

// Random llama.cpp blocks of block_elems elements: every byte random (quants, packed or int8
// scales of both signs), then the f16 scales at byte offsets `halves` of each block: both signs
// over a wide range, some subnormal (to cover every branch of the in-kernel f16 decoding).
std::vector<uint8_t> random_blocks(size_t rows, size_t cols, size_t block_elems, size_t block_bytes,
                                   std::initializer_list<size_t> halves);

// ---- Errors ----------------------------------------------------------------------------------
// Largest |got - ref| / scale over groups of `group` consecutive elements, where scale is the
// largest |ref| of the group (a row): the error relative to the output's scale. NaN (a poisoned
// element left unwritten, or a NaN computed) makes the result NaN.
double row_scaled_error(const std::vector<double>& got, const std::vector<double>& ref, size_t group);
// The same with the scale taken from `scale_of` (e.g. the input, for gelu, whose result near
// zero comes from 1 + erf(x) cancelling: its error is proportional to |x|, not to |gelu(x)|).
double row_scaled_error(const std::vector<double>& got, const std::vector<double>& ref, size_t group,
                        const std::vector<double>& scale_of);
// Largest (|got - ref| - absolute) / weight over the elements (weight > 0 each): dot-product
// style errors, weight = sum_k |a_k b_k|; `absolute`: the output type's rounding where it is
// absolute, not relative (half's subnormals: 2^-25).
double weighted_error(const std::vector<double>& got, const std::vector<double>& ref,
                      const std::vector<double>& weight, double absolute = 0);

// One measured case: recorded for the JSON report and checked (error <= bound, NaN fails).
struct Result {
  std::string op, dtype, shape, metric;
  double error = 0, bound = 0;
};
void record(const Result& r);   // also reports a gtest failure when error > bound
std::string shape_string(std::initializer_list<size_t> dims);

// Writes every recorded result to `path` as JSON (scripts/numerics-table.py reads it).
void write_report(const std::string& path);

}  // namespace gate
