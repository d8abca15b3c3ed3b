// EXPECT: 4:38: error: kernel parameter 'v' has type 'int16_t'; scalars must be bool, int32_t, uint32_t, int64_t, uint64_t, float, double or qv::half, and buffers pointers
#include <quiver/kernel.h>

QV_KERNEL void k(int16_t* y, int16_t v) { y[0] = v; }
