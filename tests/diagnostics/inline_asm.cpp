// EXPECT: 5:3: error: inline assembly is not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  asm volatile("nop");
  y[0] = 1.0f;
}
