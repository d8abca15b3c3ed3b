// EXPECT: 6:25: error: a kernel takes at most 16 parameters
#include <quiver/kernel.h>

QV_KERNEL void k(float* a0, float* a1, float* a2, float* a3, float* a4, float* a5, float* a6, float* a7,
                 float* a8, float* a9, float* a10, float* a11, float* a12, float* a13, float* a14, float* a15,
                 float* a16) { a0[0] = 1.0f; }
