// The K-quant products on int8 activations (the walks: matvec_k_a8.h).
#include "matvec_k_a8.h"

using qvops::kQuantThreads;
using qvops::matvec_q4_k_rows;
using qvops::matvec_q6_kr_rows;

// The kernels: 4 row pairs a block, and 2 with each pair's super-blocks split between two
// subgroups (`_split`, for the products of few rows: qvops::split_row).
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_k_a8(const uint32_t* w, const uint32_t* xq, const float* xd, float* y,
                                                      uint32_t rows, uint32_t cols) {
  matvec_q4_k_rows<4>(w, xq, xd, y, rows, cols);
}
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_k_a8_split(const uint32_t* w, const uint32_t* xq, const float* xd,
                                                            float* y, uint32_t rows, uint32_t cols) {
  matvec_q4_k_rows<2>(w, xq, xd, y, rows, cols);
}
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q6_kr_a8(const uint32_t* w, const qv::half* d, const uint32_t* xq,
                                                       const float* xd, float* y, uint32_t rows, uint32_t cols) {
  matvec_q6_kr_rows<4>(w, d, xq, xd, y, rows, cols);
}
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q6_kr_a8_split(const uint32_t* w, const qv::half* d, const uint32_t* xq,
                                                             const float* xd, float* y, uint32_t rows, uint32_t cols) {
  matvec_q6_kr_rows<2>(w, d, xq, xd, y, rows, cols);
}
