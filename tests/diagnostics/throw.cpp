// EXPECT: 5:20: error: exceptions are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  if (y[0] < 0.0f) throw 1;
}
