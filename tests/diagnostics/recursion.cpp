// EXPECT: 4:61: error: recursion is not supported in kernel code ('fact' calls itself)
#include <quiver/kernel.h>

QV_DEVICE int32_t fact(int32_t n) { return n <= 1 ? 1 : n * fact(n - 1); }
QV_KERNEL void k(int32_t* y) { y[0] = fact(5); }
