// EXPECT: 5:33: error: kernel parameter 'p' has type 'Pair'; scalars must be bool, int32_t, uint32_t, int64_t, uint64_t, float, double or qv::half, and buffers pointers
#include <quiver/kernel.h>

struct Pair { float a, b; };
QV_KERNEL void k(float* y, Pair p) { y[0] = 1.0f; }
