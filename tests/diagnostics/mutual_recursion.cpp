// EXPECT: 6:56: error: recursion is not supported in kernel code ('even' calls itself)
#include <quiver/kernel.h>

QV_DEVICE int32_t odd(int32_t n);
QV_DEVICE int32_t even(int32_t n) { return n == 0 ? 1 : odd(n - 1); }
QV_DEVICE int32_t odd(int32_t n) { return n == 0 ? 0 : even(n - 1); }
QV_KERNEL void k(int32_t* y) { y[0] = even(y[0]); }
