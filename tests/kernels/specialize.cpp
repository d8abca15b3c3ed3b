// QV_SPECIALIZE (include/quiver/kernel.h): out[i] = i * scale + step for i < n, with n (the
// bound) and step specialized on Vulkan, scale an ordinary parameter.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void specialized_fill(float* out, QV_SPECIALIZE uint32_t n, QV_SPECIALIZE int32_t step,
                                             float scale) {
  uint32_t i = qv::global_id_x();
  if (i < n) out[i] = static_cast<float>(i) * scale + static_cast<float>(step);
}
