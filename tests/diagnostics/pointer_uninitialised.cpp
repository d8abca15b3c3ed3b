// EXPECT: 5:10: error: pointer variable 'p' must be initialised (quiver tracks which buffer each pointer points into)
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  float* p;
  p = y;
  p[0] = 1.0f;
}
