// EXPECT: 5:47: error: arrays and string literals are not supported in kernel code
#include <quiver/kernel.h>

QV_DEVICE uint32_t length(const char* s) { return s[0] != 0 ? 1u : 0u; }
QV_KERNEL void k(uint32_t* y) { y[0] = length("abc"); }
