// One partial sum per block: a tree reduction in shared memory with barriers.
#include <quiver/kernel.h>

constexpr uint32_t kBlock = 256;

QV_KERNEL QV_BLOCK(kBlock) void block_sum(const float* in, float* partial, uint32_t n) {
  qv::shared<float, kBlock> tile;
  uint32_t t = qv::thread_id_x();
  uint32_t i = qv::global_id_x();
  tile[t] = i < n ? in[i] : 0.0f;
  qv::barrier();
  for (uint32_t stride = kBlock / 2; stride > 0; stride /= 2) {
    if (t < stride) tile[t] += tile[t + stride];
    qv::barrier();
  }
  if (t == 0) partial[qv::block_id_x()] = tile[0];
}

// Two shared arrays of the same type and size stay two arrays (a SPIR-V module combiner once
// merged identical-looking workgroup variables).
QV_KERNEL QV_BLOCK(128) void two_shared_arrays(const float* in, float* out) {
  qv::shared<float, 128> a;
  qv::shared<float, 128> b;
  uint32_t t = qv::thread_id_x(), i = qv::global_id_x();
  a[t] = in[i];
  b[t] = 2.0f * in[i];
  qv::barrier();
  out[i] = a[127 - t] - b[t];
}

// A one-element shared array is the block's, not each thread's: one thread (chosen by `pick`) sets
// it, every thread reads it after the barrier. (mem2reg once made it a per-thread value.)
QV_KERNEL QV_BLOCK(128) void shared_flag(const uint32_t* values, uint32_t pick, uint32_t* out) {
  qv::shared<uint32_t, 1> flag;
  uint32_t t = qv::thread_id_x(), b = qv::block_id_x();
  if (t == (pick + b) % 128) flag[0] = values[b];
  qv::barrier();
  out[qv::global_id_x()] = flag[0];
}
