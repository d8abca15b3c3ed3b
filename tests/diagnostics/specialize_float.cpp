// EXPECT: 6:75: error: kernel parameter 'scale': QV_SPECIALIZE takes int32_t or uint32_t parameters only
#include <quiver/kernel.h>

// A specialization constant is a 32-bit integer here (SpecId = parameter index, 4 bytes of
// VkSpecializationInfo each).
QV_KERNEL QV_BLOCK(64) void k(float* out, uint32_t n, QV_SPECIALIZE float scale) {
  uint32_t i = qv::global_id_x();
  if (i < n) out[i] = scale;
}
