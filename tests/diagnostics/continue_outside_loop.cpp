// EXPECT: 5:3: error: 'continue' statement not in loop statement
#include <quiver/kernel.h>

QV_KERNEL void k(int32_t* y) {
  continue;
}
