// EXPECT: 4:37: error: expected expression
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) { y[0] = ; }
}
