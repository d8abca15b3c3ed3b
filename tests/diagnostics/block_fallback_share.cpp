// EXPECT: quiverc: error: cpu: kernel 'k': a qv::block_acc of 16 x 16 elements in kernel 'k' is not a multiple of the block's 96 threads (the portable fallback gives each thread an equal share)
#include <quiver/kernel.h>

// 256 elements over 96 threads: the fallback's shares would differ.
QV_KERNEL QV_BLOCK(96) QV_TARGETS(cpu) void k(const qv::half* a, const qv::half* b, float* c) {
  qv::block_acc<float, 16, 16> acc;
  acc = qv::block_mma<16>(a, 16, b, 16, acc);
  qv::store_block(c, 16, acc);
}
