// EXPECT: 8:3: error: qv::copy_async_wait takes one constant count of groups, 0 to 7
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void k(const float* in, float* out, uint32_t n) {
  qv::shared<float, 256> s;
  qv::copy_async(&s[qv::thread_id_x() * 4], in + qv::thread_id_x() * 4);
  qv::copy_async_commit();
  qv::copy_async_wait(n);
  qv::barrier();
  out[qv::thread_id_x()] = s[qv::thread_id_x()];
}
