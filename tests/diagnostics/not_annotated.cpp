// EXPECT: 5:37: error: call to 'plain', which is neither QV_DEVICE nor constexpr
#include <quiver/kernel.h>

float plain(float v) { return v * 2.0f; }
QV_KERNEL void k(float* y) { y[0] = plain(1.0f); }
