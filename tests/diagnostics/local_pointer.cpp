// EXPECT: 6:14: error: pointers to local variables are not supported; pointers must point into a buffer or qv::shared array
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  float local = 1.0f;
  float* p = &local;
  y[0] = *p;
}
