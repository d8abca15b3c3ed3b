// EXPECT: 8:44: error: qv::warpgroup_mma_bt: int8_t operands take a qv::warpgroup_acc<int32_t, N>, qv::half and qv::bf16 ones a qv::warpgroup_acc<float, N>
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(128) void k(float* y) {
  qv::shared<int8_t, 8192> a;
  qv::shared<int8_t, 8192> b;
  qv::warpgroup_acc<float, 64> acc;
  acc = qv::warpgroup_mma_bt(&a[0], &b[0], acc);
  qv::store_warpgroup(y, 64, acc);
}
