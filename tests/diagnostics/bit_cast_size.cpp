// EXPECT: 6:12: error: qv::bit_cast takes one scalar of 32 bits (float, int32_t, uint32_t) or 16 bits (qv::half, qv::bf16, int16_t, uint16_t) and returns one of the same size
#include <quiver/kernel.h>

QV_KERNEL void widen(const float* x, uint32_t* out) {
  uint32_t i = qv::thread_id_x();
  out[i] = qv::bit_cast<uint32_t>(qv::half(x[i]));
}
