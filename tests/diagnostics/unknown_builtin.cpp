// EXPECT: 4:41: error: no member named 'fast_exp' in namespace 'qv'
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) { y[0] = qv::fast_exp(y[0]); }
