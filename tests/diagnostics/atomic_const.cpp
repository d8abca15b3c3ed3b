// EXPECT: 4:84: error: reinterpret_cast, const_cast and pointer casts are not supported in kernel code
#include <quiver/kernel.h>

QV_KERNEL void k(const uint32_t* counter, uint32_t* out) { out[0] = qv::atomic_add(const_cast<uint32_t*>(counter), 1u); }
