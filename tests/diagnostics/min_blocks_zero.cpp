// EXPECT: 4:24: error: QV_MIN_BLOCKS takes one constant between 1 and 32
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) QV_MIN_BLOCKS(0) void k(float* out) { out[qv::thread_id_x()] = 1.0f; }
