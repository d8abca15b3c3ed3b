// qv::copy_async (docs/async_copy.md) in the multi-stage pipeline it exists for: a block streams
// `tiles` tiles of its segment through a ring of three shared buffers, two tiles in flight while
// it works on the third, and writes each tile reversed (so every thread reads what other threads'
// copies brought in). A wait or barrier in the wrong place shows as stale or mixed tiles.
#include <quiver/kernel.h>

constexpr uint32_t kThreads = 128;
constexpr uint32_t kStages = 3;

template <typename T>
QV_KERNEL QV_BLOCK(kThreads) QV_MIN_BLOCKS(4) void async_copy_pipeline(const T* in, T* out, uint32_t tiles) {
  constexpr uint32_t kE = 16 / sizeof(T);   // elements per 16-byte copy
  constexpr uint32_t kTile = kThreads * kE;
  qv::shared<T, kStages * kTile> ring;
  uint32_t t = qv::thread_id_x();
  const T* src = in + qv::block_id_x() * tiles * kTile;
  T* dst = out + qv::block_id_x() * tiles * kTile;
  for (uint32_t s = 0; s + 1 < kStages; ++s) {
    if (s < tiles) qv::copy_async(&ring[s * kTile + t * kE], src + s * kTile + t * kE);
    qv::copy_async_commit();   // possibly empty: every thread counts the same groups
  }
  for (uint32_t i = 0; i < tiles; ++i) {
    qv::copy_async_wait(kStages - 2);   // tile i has landed (this thread's part)
    qv::barrier();                      // ... everyone's; and tile i - 1's buffer is free again
    uint32_t next = i + kStages - 1;
    if (next < tiles) qv::copy_async(&ring[(next % kStages) * kTile + t * kE], src + next * kTile + t * kE);
    qv::copy_async_commit();
    uint32_t base = (i % kStages) * kTile;
    for (uint32_t j = t; j < kTile; j += kThreads) dst[i * kTile + j] = ring[base + kTile - 1 - j];
  }
}

template void async_copy_pipeline<float>(const float*, float*, uint32_t);
template void async_copy_pipeline<qv::half>(const qv::half*, qv::half*, uint32_t);
