// EXPECT: 5:14: error: null pointers are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  float* p = nullptr;
  y[0] = p[0];
}
