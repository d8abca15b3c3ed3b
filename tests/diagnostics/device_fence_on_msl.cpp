// EXPECT: quiverc: error: msl: kernel 'publish': qv::device_fence has no MSL form (SPIRV-Cross writes it as a threadgroup barrier); limit the kernel with QV_TARGETS (at 
#include <quiver/kernel.h>

QV_KERNEL QV_TARGETS(msl) void publish(float* x, uint32_t* counter) {
  x[qv::global_id_x()] = 1.0f;
  qv::device_fence();
  if (qv::thread_id_x() == 0) qv::atomic_add(counter, 1u);
}
