// EXPECT: 5:3: error: no matching function for call to 'store'
#include <quiver/kernel.h>

QV_KERNEL void k(const float* x) {
  qv::store(x + 4, qv::load<4>(x));
}
