// EXPECT: 7:9: error: qv::block_mma<K>: K must be a multiple of 16 from 16 to 1024 (not 24)
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void k(const qv::half* a, const qv::half* b, float* c) {
  qv::block_acc<float, 32, 32> acc;
  // K of a block product: the matrix units' granularity.
  acc = qv::block_mma<24>(a, 24, b, 32, acc);
  qv::store_block(c, 32, acc);
}
