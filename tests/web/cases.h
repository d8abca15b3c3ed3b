// The web test's cases (quiver_web_cases): one kernel launch each, with fresh random inputs, the
// launch (grid, arguments) and the host reference of every output, written as one JSON file per
// case for case_runner.mjs (run_kernels.mjs in Node, run_browser.mjs in a browser). Shared by
// make_cases.cpp (the kernel suite) and op_cases.cpp (the op library against tests/ops' fp64
// oracle).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace webcases {

inline std::mt19937& rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}
inline std::vector<float> random_floats(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}
template <typename T>
std::vector<T> random_ints(size_t n, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng()));
  return v;
}

inline uint16_t half_bits(float x) { return std::bit_cast<uint16_t>(static_cast<_Float16>(x)); }
inline float half_value(uint16_t bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }
inline float bf16_value(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }
// bfloat16 nearest to x, ties to even, by comparing the two neighbours in double.
inline uint16_t bf16_bits(float x) {
  if (std::isnan(x)) return 0x7fc0;
  uint32_t u = std::bit_cast<uint32_t>(x);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  double dlo = std::bit_cast<float>(lo);
  double dhi = (hi & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), x) : double(std::bit_cast<float>(hi));
  double below = std::fabs(double(x) - dlo), above = std::fabs(dhi - double(x));
  uint32_t pick = below < above ? lo : above < below ? hi : ((lo >> 16) & 1 ? hi : lo);
  return static_cast<uint16_t>(pick >> 16);
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// How case_runner.mjs compares an output with its reference (docs in case_runner.mjs).
struct Check {
  // exact | f32 | f16 | bf16 | near | ulp | permutation | pair_slots | row_scaled | scaled
  std::string kind = "exact";
  std::vector<uint8_t> expect;
  double rel = 0, abs = 0, ulp = 0, max_mismatch_fraction = 0;
  // ulp: the reference for the inputs with their subnormal values flushed to zero, which WGSL
  // allows: within the bound of either reference passes (and zero for a subnormal reference).
  std::vector<uint8_t> expect_flushed;
  // row_scaled (the op gate's row-scaled metric, tests/ops/ops_gate_test.cpp): `expect` holds
  // doubles; max |got - ref| / max |ref| per group of `group` elements of type `elem` must stay
  // within `bound`, and the `guard` poisoned elements after the output must survive.
  // scaled: the same with the divisor of each element given in `scale` (doubles): the gate's
  // input-scaled, dot-weighted and v-scaled metrics.
  std::string elem;
  double group = 0, bound = 0, guard = 0;
  std::vector<uint8_t> scale;
};

struct Buffer {
  std::string name;
  std::vector<uint8_t> init;   // empty: poisoned (0xA5 bytes) by the runner
  size_t bytes = 0;
  bool checked = false;
  Check check;
};

struct Case {
  std::string name, kernel;
  std::string fatbin = "web_kernels.qfb";
  uint32_t grid[3] = {1, 1, 1};
  std::vector<std::string> args;   // JSON of each argument
  std::vector<Buffer> buffers;

  std::string buffer(const std::string& n, std::vector<uint8_t> init) {
    size_t bytes = init.size();
    buffers.push_back({n, std::move(init), bytes});
    return add_buffer_arg();
  }
  std::string output(const std::string& n, size_t bytes, Check check, std::vector<uint8_t> init = {}) {
    buffers.push_back({n, std::move(init), bytes, true, std::move(check)});
    return add_buffer_arg();
  }
  std::string add_buffer_arg() {
    args.push_back("{\"buffer\":" + std::to_string(buffers.size() - 1) + "}");
    return args.back();
  }
  void scalar(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "{\"value\":%.17g}", v);
    args.push_back(b);
  }
  void int64_scalar(int64_t v) { args.push_back("{\"bigint\":\"" + std::to_string(v) + "\"}"); }   // exact, as a BigInt
  void half_scalar(uint16_t bits) { args.push_back("{\"bits\":" + std::to_string(bits) + "}"); }
};

template <typename T>
Check exact(const std::vector<T>& ref, const char* kind = "exact") {
  Check c;
  c.kind = kind;
  c.expect = bytes_of(ref);
  return c;
}
inline Check near(const std::vector<float>& ref, double rel, double abs) {
  Check c = exact(ref, "near");
  c.rel = rel;
  c.abs = abs;
  return c;
}

inline uint32_t blocks(uint32_t n, uint32_t b) { return (n + b - 1) / b; }

inline std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) s += d[x >> 4], s += d[x & 15];
  return s;
}

inline void write_case(const std::filesystem::path& dir, const Case& c) {
  std::ofstream out(dir / (c.name + ".json"));
  out << "{\"name\":\"" << c.name << "\",\"fatbin\":\"" << c.fatbin << "\",\"kernel\":\"" << c.kernel << "\",\"grid\":[" << c.grid[0] << ","
      << c.grid[1] << "," << c.grid[2] << "],\"args\":[";
  for (size_t i = 0; i < c.args.size(); ++i) out << (i ? "," : "") << c.args[i];
  out << "],\"buffers\":[";
  for (size_t i = 0; i < c.buffers.size(); ++i) {
    const Buffer& b = c.buffers[i];
    out << (i ? "," : "") << "{\"name\":\"" << b.name << "\",\"bytes\":" << b.bytes << ",\"init\":\"" << hex(b.init)
        << "\"";
    if (b.checked) {
      char tol[320];
      std::snprintf(tol, sizeof tol,
                    ",\"rel\":%.17g,\"abs\":%.17g,\"ulp\":%.17g,\"max_mismatch_fraction\":%.17g,\"elem\":\"%s\","
                    "\"group\":%.17g,\"bound\":%.17g,\"guard\":%.17g",
                    b.check.rel, b.check.abs, b.check.ulp, b.check.max_mismatch_fraction, b.check.elem.c_str(),
                    b.check.group, b.check.bound, b.check.guard);
      out << ",\"check\":{\"kind\":\"" << b.check.kind << "\",\"expect\":\"" << hex(b.check.expect) << "\"" << tol;
      if (!b.check.scale.empty()) out << ",\"scale\":\"" << hex(b.check.scale) << "\"";
      if (!b.check.expect_flushed.empty()) out << ",\"expect_flushed\":\"" << hex(b.check.expect_flushed) << "\"";
      out << "}";
    }
    out << "}";
  }
  out << "]}\n";
  if (!out) {
    std::fprintf(stderr, "quiver_web_cases: cannot write %s\n", (dir / (c.name + ".json")).c_str());
    std::exit(1);
  }
}

// The op library's cases (op_cases.cpp).
std::vector<Case> make_op_cases();

}  // namespace webcases
