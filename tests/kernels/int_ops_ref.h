// Host reference of tests/kernels/int_ops.cpp (shared by the kernel suite's gtest and the web
// test's case generator): C++ semantics computed on the host, independently of the kernel.
#pragma once

#include <cstdint>

namespace int_ops_ref {

inline int32_t collatz_steps(uint32_t v, int32_t limit) {
  int32_t steps = 0;
  if (v == 0) return -1;
  do {
    if (v == 1) break;
    v = (v & 1u) ? 3u * v + 1u : v >> 1;
    ++steps;
  } while (steps < limit);
  return steps;
}

// The kernel's `out` element for inputs x, y.
inline int32_t out(int32_t x, uint32_t y) {
  switch (y % 8u) {
    case 0: return x / 7;
    case 1: return x % 5 + int32_t(y >> 3);
    case 2: return int32_t(y >> 3);
    case 3: case 4: return collatz_steps(y, 200);
    case 5: {
      int32_t acc = 0;
      for (int32_t k = 0; k < 32; ++k) {
        if (k % 3 == 0) continue;
        if (acc > 1000) break;
        acc += k;
      }
      return int32_t(uint32_t(acc) - uint32_t(x));
    }
    default: return int32_t(uint32_t(x) / (y | 1u)) ^ (x >> 2);
  }
}

// The kernel's `wide` element.
inline int64_t wide(int32_t x, uint32_t y) { return int64_t(x) * int64_t(y) + int8_t(x) - uint16_t(y); }

}  // namespace int_ops_ref
