// Evaluates the math builtins over a dense sweep so the host can measure each target's error
// against fp64 (docs/numerics.md).
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(256) void math_sweep(const float* x, float* e, float* t, float* er, float* rs, float* e2, float* e2f,
                                         float* rc, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  float v = x[i];
  e[i] = qv::exp(v);
  t[i] = qv::tanh(v);
  er[i] = qv::erf(v);
  rs[i] = qv::rsqrt(qv::abs(v) + 1e-30f);
  e2[i] = qv::exp2(v);
  e2f[i] = qv::exp2_ftz(v);
  rc[i] = qv::rcp(qv::abs(v) + 1e-30f);
}
