// EXPECT: 4:42: error: kernel parameter 'flags': vectors of bool are not supported
#include <quiver/kernel.h>

QV_KERNEL void k(const qv::vec<bool, 4>* flags, float* out) { out[0] = 1.0f; }
