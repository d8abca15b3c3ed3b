// EXPECT: 4:16: error: QV_KERNEL 'k' is declared but never defined
#include <quiver/kernel.h>

QV_KERNEL void k(float* y);
