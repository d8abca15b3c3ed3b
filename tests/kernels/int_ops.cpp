// Integer control flow: switch with fall-through and default, do/while, continue/break,
// signed and unsigned division, shifts and mixed-width arithmetic.
#include <quiver/kernel.h>

QV_DEVICE int32_t collatz_steps(uint32_t v, int32_t limit) {
  int32_t steps = 0;
  if (v == 0) return -1;
  do {
    if (v == 1) break;
    v = (v & 1u) ? 3u * v + 1u : v >> 1;
    ++steps;
  } while (steps < limit);
  return steps;
}

QV_KERNEL QV_BLOCK(128) void int_ops(const int32_t* a, const uint32_t* b, int32_t* out, int64_t* wide, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  int32_t x = a[i];
  uint32_t y = b[i];
  int32_t r = 0;
  switch (y % 8u) {
    case 0:
      r = x / 7;             // signed division truncates toward zero
      break;
    case 1:
      r = x % 5;
      [[fallthrough]];
    case 2:
      r += static_cast<int32_t>(y >> 3);
      break;
    case 3:
    case 4:
      r = collatz_steps(y, 200);
      break;
    case 5: {
      int32_t acc = 0;
      for (int32_t k = 0; k < 32; ++k) {
        if (k % 3 == 0) continue;
        if (acc > 1000) break;
        acc += k;
      }
      r = acc - x;
      break;
    }
    default:
      r = static_cast<int32_t>(static_cast<uint32_t>(x) / (y | 1u)) ^ (x >> 2);
  }
  out[i] = r;
  int8_t small = static_cast<int8_t>(x);
  uint16_t half_word = static_cast<uint16_t>(y);
  wide[i] = static_cast<int64_t>(x) * static_cast<int64_t>(y) + small - half_word;
}
