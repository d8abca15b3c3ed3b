// EXPECT: 7:3: error: no matching function for call to 'store_matrix'
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(32) void k(const int8_t* a, const int8_t* b, float* c) {
  qv::matrix_acc<int32_t> acc;
  acc = qv::mma(qv::load_matrix_a(a, 32), qv::load_matrix_b(b, 16), acc);
  qv::store_matrix(c, 16, acc);
}
