// EXPECT: 4:36: error: kernel parameter 'f': buffers of 'float (float)' are not supported
#include <quiver/kernel.h>

QV_KERNEL void k(float* y, float (*f)(float)) { y[0] = f(1.0f); }
