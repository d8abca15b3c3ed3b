// EXPECT: 5:14: error: new and delete are not supported in kernel code (no dynamic allocation on the device)
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  float* p = new float[4];
  y[0] = p[0];
}
