// Shared by the kernel-suite test files: the device and module under test, random inputs,
// uploads, poisoned outputs and downloads.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <quiver/runtime.h>
#include "test_kernels.h"

namespace kernels_test {

struct Env {
  quiver::Device dev = quiver::Device::open();
  quiver::Module mod = test_kernels::load(dev);
};
inline Env& env() {
  static Env e;
  return e;
}

// IEEE binary16 of the host compiler, the reference for half conversions: _Float16, and on
// aarch64 __fp16 (the same format; GCC before 13 has no _Float16 in C++ there).
#if defined(__aarch64__)
using host_half = __fp16;
#else
using host_half = _Float16;
#endif
inline uint16_t half_bits(float x) { return std::bit_cast<uint16_t>(static_cast<host_half>(x)); }
inline float half_value(uint16_t bits) { return static_cast<float>(std::bit_cast<host_half>(bits)); }

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
std::vector<T> random_ints(size_t n, T lo, T hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(rng()));
  return v;
}
template <typename T>
quiver::Buffer<T> upload(const std::vector<T>& host) {
  auto b = env().dev.alloc<T>(host.size());
  b.upload(host);
  return b;
}
template <typename T>
quiver::Buffer<T> poisoned(size_t n) {
  std::vector<T> p(n);
  std::memset(p.data(), 0xA5, n * sizeof(T));   // NaN-ish for floats, 0xA5A5... for ints
  return upload(p);
}
template <typename T>
std::vector<T> download(const quiver::Buffer<T>& b) {
  std::vector<T> v(b.size());
  b.download(v);
  return v;
}

}  // namespace kernels_test
