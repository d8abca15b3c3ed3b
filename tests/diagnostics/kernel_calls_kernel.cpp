// EXPECT: 5:34: error: a kernel cannot call another QV_KERNEL
#include <quiver/kernel.h>

QV_KERNEL void inner(float* y) { y[0] = 1.0f; }
QV_KERNEL void outer(float* y) { inner(y); }
