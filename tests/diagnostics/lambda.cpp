// EXPECT: 5:8: error: lambdas are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  auto twice = [](float v) { return 2.0f * v; };
  y[0] = twice(y[0]);
}
