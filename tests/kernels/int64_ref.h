// Host reference of tests/kernels/int64_ops.cpp (shared by the kernel suite's gtest and the web
// test's case generator), and inputs that reach every width: full-range values, small ones,
// values near 2^31 / 2^32 and powers of two, of both signs.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace int64_ref {

struct Result {
  std::array<int64_t, 16> out;
  float f[2];
};

inline Result compute(int64_t x, int64_t y, float v, int64_t k, uint32_t i) {
  uint64_t ux = uint64_t(x), uy = uint64_t(y);
  uint32_t s = uint32_t(y) & 63u;
  Result r{};
  r.out[0] = int64_t(ux + uy);
  r.out[1] = int64_t(ux - uy);
  r.out[2] = int64_t(ux * uy);
  r.out[3] = y != 0 ? x / y : 0;
  r.out[4] = y != 0 ? x % y : 0;
  r.out[5] = int64_t(uy != 0 ? ux / uy : 0);
  r.out[6] = int64_t(uy != 0 ? ux % uy : 0);
  r.out[7] = int64_t(ux << s);
  r.out[8] = x >> s;
  r.out[9] = int64_t(ux >> s);
  r.out[10] = (x & y) ^ (x | k);
  r.out[11] = (x < y ? 1 : 0) + (ux < uy ? 2 : 0) + (x <= k ? 4 : 0) + (x == y ? 8 : 0) + (ux >= uy ? 16 : 0);
  r.out[12] = int64_t(uint64_t(x < y ? x : y) ^ (ux > uy ? ux : uy));
  r.out[13] = int64_t(v);
  r.out[14] = int64_t(uint64_t(v < 0.0f ? -v : v));
  r.out[15] = int64_t(ux * uint64_t(k) + i - uint64_t(int32_t(x)));
  r.f[0] = float(x);
  r.f[1] = float(ux);
  return r;
}

inline std::vector<int64_t> inputs(size_t n, std::mt19937& g) {
  std::vector<int64_t> v(n);
  std::uniform_int_distribution<uint64_t> any;
  std::uniform_int_distribution<int> pick(0, 4), bit(0, 63), small(-1000, 1000);
  for (auto& x : v) {
    switch (pick(g)) {
      case 0: x = int64_t(any(g)); break;
      case 1: x = small(g); break;
      case 2: x = int64_t(0x80000000ull) + small(g); break;
      case 3: x = -int64_t(0x100000000ull) + small(g); break;
      default: x = int64_t((1ull << bit(g)) + uint64_t(small(g) % 3)); break;
    }
    if (any(g) & 1) x = int64_t(0 - uint64_t(x));
  }
  return v;
}

// Divisors: the same mix, never -1 against INT64_MIN (the one overflowing signed division).
inline void fix_divisors(const std::vector<int64_t>& a, std::vector<int64_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] == INT64_MIN && b[i] == -1) b[i] = 3;
}

// Floats whose truncation fits int64 (|v| < 2^62), small and large.
inline std::vector<float> floats(size_t n, std::mt19937& g) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> small(-300.0f, 300.0f), mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> e(0, 61), coin(0, 1);
  for (auto& x : v) x = coin(g) ? small(g) : (coin(g) ? -1.0f : 1.0f) * std::ldexp(mant(g), e(g));
  return v;
}

}  // namespace int64_ref
