// EXPECT: 5:14: error: both arms of '?:' must point into the same buffer
#include <quiver/kernel.h>

QV_KERNEL void k(float* a, float* b, uint32_t n) {
  float* p = n > 4 ? a : b;
  p[0] = 1.0f;
}
