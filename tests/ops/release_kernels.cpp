// The user fat binary of device_release_test.cpp, reached through its generated header the way
// a program reaches its own kernels: one small kernel, so that each cycle's load stays cheap.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void scale_shift(const float* x, float* y, float a, float b, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) y[i] = a * x[i] + b;
}
