// EXPECT: 6:20: error: arithmetic on 'vec<half, 8>' is not supported: half and bf16 are storage types (convert the elements to float)
#include <quiver/kernel.h>

QV_KERNEL void k(const qv::half* x, qv::half* out) {
  qv::half8 v = qv::load<8>(x);
  qv::store(out, v + v);
}
