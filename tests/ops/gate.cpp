// The numeric gate's infrastructure (gate.h).
#include "gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <sstream>

namespace gate {

quiver::Device& device() {
  static quiver::Device dev = quiver::Device::open();
  return dev;
}

uint64_t seed() {
  static const uint64_t s = [] {
    if (const char* env = std::getenv("QUIVER_OPS_SEED"); env != nullptr && *env != '\0')
      return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    return static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
           (static_cast<uint64_t>(std::random_device{}()) << 32);
  }();
  return s;
}

std::mt19937_64& rng() {
  static std::mt19937_64 g(seed());
  return g;
}

bool big_shapes() {
  const char* env = std::getenv("QUIVER_OPS_BIG");
  return env != nullptr && std::string(env) == "1";
}

// ---- IEEE formats with `mant` stored significand bits and `expo` exponent bits ------------------
namespace {

uint16_t round_to_format(double v, int mant, int expo) {
  const int bias = (1 << (expo - 1)) - 1;
  const int emin = 1 - bias, emax = bias;
  const uint16_t sign = std::signbit(v) ? uint16_t(1u << (mant + expo)) : uint16_t(0);
  const uint16_t exp_all = uint16_t(((1u << expo) - 1) << mant);
  if (std::isnan(v)) return uint16_t(exp_all | (1u << (mant - 1)));   // quiet NaN
  double a = std::fabs(v);
  if (std::isinf(a)) return uint16_t(sign | exp_all);
  if (a == 0) return sign;
  int e = std::ilogb(a);                              // a in [2^e, 2^(e+1))
  int quantum_exp = (e < emin ? emin : e) - mant;     // spacing of representable values near a
  double r = std::nearbyint(std::ldexp(a, -quantum_exp));   // round to nearest even (default mode)
  double rounded = std::ldexp(r, quantum_exp);
  if (rounded >= std::ldexp(1.0, emax + 1)) return uint16_t(sign | exp_all);   // overflow to inf
  int re = std::ilogb(rounded);
  if (re < emin) return uint16_t(sign | uint16_t(std::ldexp(rounded, mant - emin)));   // subnormal
  uint32_t frac = uint32_t(std::ldexp(rounded, mant - re)) - (1u << mant);
  return uint16_t(sign | uint16_t(uint32_t(re + bias) << mant) | frac);
}

double format_value(uint16_t bits, int mant, int expo) {
  const int bias = (1 << (expo - 1)) - 1;
  const uint32_t e = (bits >> mant) & ((1u << expo) - 1), f = bits & ((1u << mant) - 1);
  const double sign = (bits >> (mant + expo)) & 1 ? -1.0 : 1.0;
  if (e == (1u << expo) - 1) return f != 0 ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(double(f), 1 - bias - mant);
  return sign * std::ldexp(double(f + (1u << mant)), int(e) - bias - mant);
}

}  // namespace

uint16_t bf16_bits(double v) { return round_to_format(v, 7, 8); }
uint16_t half_bits(double v) { return round_to_format(v, 10, 5); }
double bf16_value(uint16_t bits) { return format_value(bits, 7, 8); }
double half_value(uint16_t bits) { return format_value(bits, 10, 5); }

// ---- Errors ------------------------------------------------------------------------------------
namespace {
// max that lets a NaN win, whatever the order.
void take_max(double& m, double e) {
  if (std::isnan(e) || e > m) m = std::isnan(m) ? m : e;
}
}  // namespace

double row_scaled_error(const std::vector<double>& got, const std::vector<double>& ref, size_t group) {
  return row_scaled_error(got, ref, group, ref);
}

double row_scaled_error(const std::vector<double>& got, const std::vector<double>& ref, size_t group,
                        const std::vector<double>& scale_of) {
  double worst = 0;
  for (size_t start = 0; start < ref.size(); start += group) {
    size_t end = std::min(ref.size(), start + group);
    double scale = 0;
    for (size_t i = start; i < end; ++i) scale = std::max(scale, std::fabs(scale_of[i]));
    if (scale == 0) scale = 1;   // an all-zero row: absolute error
    for (size_t i = start; i < end; ++i) take_max(worst, std::fabs(got[i] - ref[i]) / scale);
  }
  return worst;
}

double weighted_error(const std::vector<double>& got, const std::vector<double>& ref,
                      const std::vector<double>& weight, double absolute) {
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double w = weight[i] > 0 ? weight[i] : 1;
    double e = std::fabs(got[i] - ref[i]);
    take_max(worst, (std::isnan(e) ? e : std::max(e - absolute, 0.0)) / w);   // NaN fails
  }
  return worst;
}

// ---- Report -------------------------------------------------------------------------------------
namespace {
std::mutex& report_mutex() {
  static std::mutex m;
  return m;
}
std::vector<Result>& results() {
  static std::vector<Result> r;
  return r;
}
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
std::string json_number(double v) {
  if (std::isnan(v)) return "null";   // JSON has no NaN; the gate already failed on it
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
}
}  // namespace

std::string shape_string(std::initializer_list<size_t> dims) {
  std::string s;
  for (size_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

void record(const Result& r) {
  {
    std::lock_guard lock(report_mutex());
    results().push_back(r);
  }
  std::printf("  %-14s %-5s %-22s %-13s error %.3g (bound %.3g)\n", r.op.c_str(), r.dtype.c_str(), r.shape.c_str(),
              r.metric.c_str(), r.error, r.bound);
  EXPECT_TRUE(r.error <= r.bound) << r.op << " " << r.dtype << " " << r.shape << ": " << r.metric << " error "
                                  << r.error << " exceeds the bound " << r.bound << " (seed " << seed() << ")";
}

void write_report(const std::string& path) {
  std::lock_guard lock(report_mutex());
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "ops gate: cannot write the report to %s\n", path.c_str());
    return;
  }
  quiver::Device& dev = device();
  out << "{\n  \"backend\": " << json_string(dev.backend_name()) << ",\n  \"device\": "
      << json_string(dev.device_name()) << ",\n  \"image\": "
      << json_string(std::string(quiver::ops::library(dev).backend_image())) << ",\n  \"seed\": " << seed()
      << ",\n  \"big_shapes\": " << (big_shapes() ? "true" : "false") << ",\n  \"results\": [";
  for (size_t i = 0; i < results().size(); ++i) {
    const Result& r = results()[i];
    out << (i ? ",\n" : "\n") << "    {\"op\": " << json_string(r.op) << ", \"dtype\": " << json_string(r.dtype)
        << ", \"shape\": " << json_string(r.shape) << ", \"metric\": " << json_string(r.metric)
        << ", \"error\": " << json_number(r.error) << ", \"bound\": " << json_number(r.bound)
        << ", \"pass\": " << (r.error <= r.bound ? "true" : "false") << "}";
  }
  out << "\n  ]\n}\n";
  std::printf("ops gate: wrote %zu results to %s\n", results().size(), path.c_str());
}

std::vector<uint8_t> random_blocks(size_t rows, size_t cols, size_t block_elems, size_t block_bytes,
                                   std::initializer_list<size_t> halves) {
  std::vector<uint8_t> blocks(rows * (cols / block_elems) * block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<double> magnitude(-14, -4);   // scale 2^-14 .. 2^-4
  std::bernoulli_distribution subnormal(0.05), negative(0.3);
  for (uint8_t& b : blocks) b = uint8_t(byte(rng()));
  for (size_t b = 0; b < blocks.size(); b += block_bytes) {
    for (size_t at : halves) {
      uint16_t d = half_bits((negative(rng()) ? -1 : 1) * std::exp2(magnitude(rng())));
      if (subnormal(rng())) d = uint16_t((d & 0x8000) | byte(rng()) | (byte(rng()) & 3) << 8);
      blocks[b + at] = uint8_t(d & 0xFF);
      blocks[b + at + 1] = uint8_t(d >> 8);
    }
  }
  return blocks;
}


}  // namespace gate
