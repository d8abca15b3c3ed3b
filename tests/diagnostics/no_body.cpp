// EXPECT: 5:37: error: call to 'external_fn', which has no definition quiverc can see; kernels may only call QV_DEVICE or constexpr functions defined in their translation unit
#include <quiver/kernel.h>

float external_fn(float);
QV_KERNEL void k(float* y) { y[0] = external_fn(1.0f); }
