// EXPECT: 6:12: error: qv::bit_cast takes one 32-bit scalar (float, int32_t, uint32_t) and returns one
#include <quiver/kernel.h>

QV_KERNEL void widen(const float* x, uint32_t* out) {
  uint32_t i = qv::thread_id_x();
  out[i] = qv::bit_cast<uint32_t>(qv::half(x[i]));
}
