// EXPECT: 4:11: error: QV_BLOCK has more than 1024 threads in total
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(32, 64) void k(float* y) { y[0] = 1.0f; }
