// EXPECT: 9:19: error: qv::store_block needs a pointer to float, qv::half or qv::bf16 elements (not 'int32_t *')
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void k(const qv::half* a, const qv::half* b, int32_t* c) {
  qv::block_acc<float, 32, 32> acc;
  acc = qv::block_mma<16>(a, 16, b, 32, acc);
  // Block accumulators store as float, half or bf16; an int32 store has no conversion here.
  qv::barrier();
  qv::store_block(c, 32, acc);
}
