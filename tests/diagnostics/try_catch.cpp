// EXPECT: 5:3: error: exceptions are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  try {
    y[0] = 1.0f;
  } catch (...) {
  }
}
