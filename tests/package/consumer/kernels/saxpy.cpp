// Kernels of the installed-package test: a plain kernel, one with a bool scalar, and a
// template with two explicit instantiations (launched by name, they get no wrapper).
#include <quiver/kernel.h>

#include "consumer_math.h"

QV_KERNEL QV_BLOCK(256)
void saxpy(const float* x, float* y, float a, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) y[i] = axpy(a, x[i], y[i]);
}

QV_KERNEL QV_BLOCK(128)
void scaled_copy(const float* in, float* out, float s, bool negate, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) out[i] = negate ? -(s * in[i]) : s * in[i];
}

template <typename T, uint32_t K>
QV_KERNEL QV_BLOCK(64) void scale_by(const T* in, T* out, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) out[i] = in[i] * static_cast<T>(K);
}
template void scale_by<float, 3>(const float*, float*, uint32_t);
template void scale_by<int32_t, 5>(const int32_t*, int32_t*, uint32_t);
