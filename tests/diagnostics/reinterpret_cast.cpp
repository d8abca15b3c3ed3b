// EXPECT: 4:56: error: reinterpret_cast, const_cast and pointer casts are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y, uint32_t* bits) { bits[0] = reinterpret_cast<uint32_t*>(y)[0]; }
