// EXPECT: 4:31: error: kernel parameter 'y': buffers of 'long double' are not supported
#include <quiver/kernel.h>

QV_KERNEL void k(long double* y) { y[0] = 1; }
