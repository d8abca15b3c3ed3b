// EXPECT: 4:20: error: QV_BLOCK sizes must be constants between 1 and 1024
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(0) void k(float* y) { y[0] = 1.0f; }
