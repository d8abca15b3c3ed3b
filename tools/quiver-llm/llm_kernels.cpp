// quiver-llm's own kernels (compiled by quiverc with the runner, reached through the generated
// llm_kernels.h): what a decode step does besides the op library's ops.
#include <quiver/kernel.h>

// The end of a step: the chosen token (argmax's output, which the next step embeds) is kept as
// generated[p] and the position p advances, all on the device, so a recorded step replays with
// no host work in between.
QV_KERNEL QV_BLOCK(32) void advance(int32_t* position, const int32_t* token, int32_t* generated, uint32_t capacity) {
  if (qv::thread_id_x() != 0) return;
  int32_t p = position[0];
  if (p >= 0 && static_cast<uint32_t>(p) < capacity) generated[p] = token[0];
  position[0] = p + 1;
}
