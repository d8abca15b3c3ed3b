// EXPECT: quiverc: error: spirv: kernel 'scale': double is not supported by the portable Vulkan 1.2 target (shaderFloat64 is an optional device feature); use float, or build this kernel for ptx/cpu only (in parameter 0 'x')
#include <quiver/kernel.h>

QV_KERNEL void scale(double* x, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) x[i] = x[i] * 2.0;
}
