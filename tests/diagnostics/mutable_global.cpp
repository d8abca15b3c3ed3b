// EXPECT: 5:39: error: mutable global variable 'counter' cannot be used in kernel code (only constexpr globals)
#include <quiver/kernel.h>

int32_t counter = 0;
QV_KERNEL void k(int32_t* y) { y[0] = counter; }
