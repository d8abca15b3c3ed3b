// Launches that may overlap (docs/abi.md "Overlapped launches"): each kernel reads what the one
// before it wrote. chain_step reads its table (which no launch writes) before it waits for the
// earlier launches, and its surplus blocks return before ever reaching the wait; chain_accumulate
// waits at its entry, as every kernel that never calls qv::wait_prior_launches does. A kernel
// that read its input early would see the value before the previous launch, and the host's
// replay of the chain would disagree.
#include <quiver/kernel.h>

constexpr uint32_t kChainThreads = 256;

QV_KERNEL QV_BLOCK(kChainThreads) void chain_step(const float* table, const float* in, float* out, uint32_t n) {
  uint32_t i = qv::block_id_x() * kChainThreads + qv::thread_id_x();
  if (i >= n) return;
  float t = table[i];
  qv::wait_prior_launches();
  out[i] = in[i] * 0.5f + t;
}

QV_KERNEL QV_BLOCK(kChainThreads) void chain_accumulate(float* acc, const float* in, uint32_t n) {
  uint32_t i = qv::block_id_x() * kChainThreads + qv::thread_id_x();
  if (i < n) acc[i] = acc[i] + in[i];
}
