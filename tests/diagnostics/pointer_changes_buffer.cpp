// EXPECT: 6:16: error: pointer 'p' would point into a different buffer than the one it was initialised with; quiver requires each pointer to stay in one buffer
#include <quiver/kernel.h>

QV_KERNEL void k(float* a, float* b, uint32_t n) {
  float* p = a;
  if (n > 4) p = b;
  p[0] = 1.0f;
}
