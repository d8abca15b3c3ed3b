// EXPECT: 5:11: error: kernel 'k' uses warpgroup builtins, so its block needs a multiple of 128 threads (it has 64)
#include <quiver/kernel.h>

// Warpgroups are 128 consecutive threads: a 64-thread block has none.
QV_KERNEL QV_BLOCK(64) void k(float* y) {
  qv::warpgroup_acc<float, 64> acc(1.0f);
  qv::store_warpgroup(y, 64, acc);
}
