// EXPECT: 6:5: error: case ranges are not supported
#include <quiver/kernel.h>

QV_KERNEL void k(int32_t* y) {
  switch (y[0]) {
    case 1 ... 3: y[0] = 0; break;
    default: break;
  }
}
