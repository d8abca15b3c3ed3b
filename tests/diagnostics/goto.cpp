// EXPECT: 5:3: error: goto and labels are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  goto done;
done:
  y[0] = 1.0f;
}
