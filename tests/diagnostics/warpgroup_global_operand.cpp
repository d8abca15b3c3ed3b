// EXPECT: 7:37: error: qv::warpgroup_mma_bt reads its operands from qv::shared arrays (this pointer is not into one)
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(128) void k(const qv::bf16* a, float* y) {
  qv::shared<qv::bf16, 4096> b;
  qv::warpgroup_acc<float, 64> acc;
  acc = qv::warpgroup_mma_bt(&b[0], a, acc);
  qv::store_warpgroup(y, 64, acc);
}
