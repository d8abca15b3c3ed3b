// EXPECT: 5:30: error: functions returning pointers are not supported in kernel code
#include <quiver/kernel.h>

QV_DEVICE float* second(float* p) { return p + 1; }
QV_KERNEL void k(float* y) { second(y)[0] = 1.0f; }
