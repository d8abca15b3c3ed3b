// EXPECT: 7:9: error: no matching function for call to 'mma'
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(32) void k(const int8_t* a, const qv::half* b, int32_t* c) {
  qv::matrix_acc<int32_t> acc;
  qv::matrix_a<int8_t> ta = qv::load_matrix_a(a, 32);
  acc = qv::mma(ta, qv::load_matrix_b(b, 16), acc);
  qv::store_matrix(c, 16, acc);
}
