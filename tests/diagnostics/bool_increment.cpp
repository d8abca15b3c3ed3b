// EXPECT: 6:4: error: ISO C++17 does not allow incrementing expression of type bool [-Wincrement-bool]
#include <quiver/kernel.h>

QV_KERNEL void k(bool* y) {
  bool b = y[0];
  b++;
  y[0] = b;
}
