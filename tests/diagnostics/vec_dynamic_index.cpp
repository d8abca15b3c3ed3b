// EXPECT: 6:14: error: a qv::vec element index must be a constant from 0 to 3
#include <quiver/kernel.h>

QV_KERNEL void k(const float* x, float* out, uint32_t lane) {
  qv::float4 v = qv::load<4>(x);
  out[0] = v[lane] + v[0];
}
