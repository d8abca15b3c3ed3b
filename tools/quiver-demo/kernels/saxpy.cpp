// y = a * x + y: one thread per element.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(256)
void saxpy(const float* x, float* y, float a, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
