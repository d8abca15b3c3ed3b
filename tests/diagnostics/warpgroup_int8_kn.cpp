// EXPECT: 9:9: error: qv::warpgroup_mma on int8_t: 8-bit warpgroup products read B only K-major; store B as its N x K transpose and call qv::warpgroup_mma_bt
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(128) void k(int32_t* y) {
  qv::shared<int8_t, 8192> a;
  qv::shared<int8_t, 8192> b;
  qv::warpgroup_acc<int32_t, 64> acc;
  // B given K x N: wgmma's 8-bit products have no transposed (MN-major) operand.
  acc = qv::warpgroup_mma(&a[0], &b[0], 8192, acc);
  qv::store_warpgroup(y, 64, acc);
}
