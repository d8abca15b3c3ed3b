// qv::dot4_i8 on every target, and double arithmetic and math on the targets that have it.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void dot4(const uint32_t* a, const uint32_t* b, const int32_t* acc, int32_t* out, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) out[i] = qv::dot4_i8(a[i], b[i], acc[i]);
}

QV_KERNEL QV_TARGETS(ptx, cpu) QV_BLOCK(64) void double_math(const double* x, double* out, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  double v = x[i];
  out[i] = qv::sqrt(v * v + 1.0) + qv::exp(-v) * 0.25 + qv::log(v + 2.0) / 3.0;
}
