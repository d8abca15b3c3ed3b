// EXPECT: 4:68: error: pointers into different buffers cannot be compared or subtracted
#include <quiver/kernel.h>

QV_KERNEL void k(float* a, float* b, uint32_t* same) { same[0] = a == b ? 1u : 0u; }
