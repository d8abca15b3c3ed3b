// EXPECT: 5:3: error: new and delete are not supported in kernel code (no dynamic allocation on the device)
#include <quiver/kernel.h>

QV_KERNEL void k(float* y, float* z) {
  delete z;
  y[0] = 1.0f;
}
