// Atomics on device and shared memory, with their return values.
#include <quiver/kernel.h>

// Histogram of bytes into 64 bins: per-block counts in shared memory, merged into the global
// histogram; plus global sum / max / min and a float sum.
QV_KERNEL QV_BLOCK(256) void histogram(const uint32_t* values, uint32_t n, uint32_t* bins, int32_t* imax,
                                       int32_t* imin, float* fsum, uint32_t* umax) {
  qv::shared<uint32_t, 64> local;
  uint32_t t = qv::thread_id_x();
  if (t < 64) local[t] = 0;
  qv::barrier();
  uint32_t i = qv::global_id_x();
  if (i < n) {
    uint32_t v = values[i];
    qv::atomic_add(&local[v % 64], 1u);
    int32_t s = static_cast<int32_t>(v) - 1000000;
    qv::atomic_max(imax, s);
    qv::atomic_min(imin, s);
    qv::atomic_max(umax, v);
    qv::atomic_add(fsum, static_cast<float>(v % 16));   // small integers: the float sum is exact
  }
  qv::barrier();
  if (t < 64) qv::atomic_add(&bins[t], local[t]);
}

// Every thread takes a unique ticket with atomic_add's return value, claims a slot with
// compare-and-swap, and swaps a marker in with atomic_exchange.
QV_KERNEL QV_BLOCK(128) void tickets(uint32_t* counter, uint32_t* order, uint32_t* slots, int32_t* swapped,
                                     uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  uint32_t ticket = qv::atomic_add(counter, 1u);
  order[ticket] = i;
  uint32_t old = qv::atomic_cas(&slots[i / 2], 0xFFFFFFFFu, i);   // the first of each pair wins
  if (old != 0xFFFFFFFFu && old != (i ^ 1u)) slots[i / 2] = 0xBADu;   // lost only to its partner
  swapped[i] = qv::atomic_exchange(&swapped[i], -static_cast<int32_t>(i)) + 1;
}

// The last block to arrive (qv::device_fence between the stores and the counter's atomic): each
// block stores its partial sum, takes a ticket; the block with the last ticket reads every
// partial, writes the total and its own block number, and leaves the counter at 0 for the next
// launch. The partials are read by another block than the one that wrote them, so without the
// fences a GPU may hand the last block stale or missing values.
QV_KERNEL QV_TARGETS(ptx, spirv, cpu, hsaco) QV_BLOCK(128) void last_block_sum(
    const uint32_t* values, uint32_t n, uint32_t* partials, uint32_t* counter, uint32_t* total, uint32_t* last) {
  qv::shared<uint32_t, 1> ticket;
  uint32_t t = qv::thread_id_x(), blocks = qv::grid_dim_x();
  uint32_t i = qv::global_id_x();
  uint32_t sum = qv::block_sum(i < n ? values[i] : 0u);
  if (t == 0) partials[qv::block_id_x()] = sum;
  qv::device_fence();
  qv::barrier();
  if (t == 0) ticket[0] = qv::atomic_add(counter, 1u);
  qv::barrier();
  if (ticket[0] != blocks - 1) return;
  qv::device_fence();
  uint32_t part = 0;
  for (uint32_t b = t; b < blocks; b += 128) part += partials[b];
  part = qv::block_sum(part);
  if (t == 0) {
    total[0] = part;
    last[0] = qv::block_id_x();
    counter[0] = 0;
  }
}
