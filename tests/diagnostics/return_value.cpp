// EXPECT: 4:11: error: a QV_KERNEL must return void
#include <quiver/kernel.h>

QV_KERNEL float k(float* y) { return y[0]; }
