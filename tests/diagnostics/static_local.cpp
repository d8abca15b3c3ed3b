// EXPECT: 5:18: error: mutable static variables are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(int32_t* y) {
  static int32_t calls = 0;
  y[0] = calls;
}
