// More shared memory than a static CUDA `.shared` array may hold (48 KiB): 61 KiB in two arrays,
// which the PTX target turns into views of dynamic shared memory (docs/abi.md). Each block
// stages 15360 floats, then every thread reads back elements other threads wrote, from the far
// end of the big array and through the small one, so a wrong offset or size shows.
#include <quiver/kernel.h>

constexpr uint32_t kBig = 15360;   // 60 KiB of float
constexpr uint32_t kThreads = 256;

QV_KERNEL QV_BLOCK(kThreads) void shared_large_reverse(const float* in, float* out, uint32_t n) {
  qv::shared<float, kBig> big;
  qv::shared<uint32_t, kThreads> small;
  uint32_t t = qv::thread_id_x();
  uint32_t base = qv::block_id_x() * kBig;
  for (uint32_t i = t; i < kBig; i += kThreads) big[i] = base + i < n ? in[base + i] : 0.0f;
  small[t] = t * 3u + 1u;
  qv::barrier();
  // out[base + i] = in[base + kBig - 1 - i] + small[255 - t]; t is i's thread.
  for (uint32_t i = t; i < kBig; i += kThreads)
    if (base + i < n) out[base + i] = big[kBig - 1 - i] + static_cast<float>(small[kThreads - 1 - t]);
}
