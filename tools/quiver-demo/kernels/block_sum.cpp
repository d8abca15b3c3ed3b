// Per-block sums: block b writes the sum of in[b * 256 .. b * 256 + 255] (elements past n
// count as 0) to partial[b]. A tree reduction in shared memory, one barrier per level.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(256)
void block_sum(const float* in, float* partial, uint32_t n) {
  qv::shared<float, 256> tile;
  uint32_t tid = qv::thread_id_x();
  uint32_t i = qv::global_id_x();
  tile[tid] = i < n ? in[i] : 0.0f;
  qv::barrier();
  for (uint32_t stride = 128; stride > 0; stride = stride / 2) {
    if (tid < stride) tile[tid] = tile[tid] + tile[tid + stride];
    qv::barrier();
  }
  if (tid == 0) partial[qv::block_id_x()] = tile[0];
}
