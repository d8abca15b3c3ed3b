// EXPECT: 5:9: error: local arrays are not supported in v1; use qv::shared or scalars
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  float acc[4];
  acc[0] = 1.0f;
  y[0] = acc[0];
}
