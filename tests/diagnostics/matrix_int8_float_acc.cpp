// EXPECT: 7:47: error: qv::mma of int8_t tiles accumulates in qv::matrix_acc<int32_t> (not 'matrix_acc<float>')
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(32) void k(const int8_t* a, const int8_t* b, float* c) {
  qv::matrix_acc<float> acc;
  qv::matrix_a<int8_t> ta = qv::load_matrix_a(a, 32);
  acc = qv::mma(ta, qv::load_matrix_b(b, 16), acc);
  qv::store_matrix(c, 16, acc);
}
