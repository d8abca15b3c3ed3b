// EXPECT: 5:25: error: qv::matrix_a / qv::matrix_b elements must be qv::half, qv::bf16 or int8_t (not 'int32_t')
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(32) void k(const int32_t* a, int32_t* c) {
  qv::matrix_a<int32_t> ta = qv::load_matrix_a(a, 16);
  qv::matrix_acc<int32_t> acc;
  qv::store_matrix(c, 16, acc);
}
