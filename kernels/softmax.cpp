// Row softmax and log_softmax, numerically stable: the row maximum is subtracted before exp, so
// no exp overflows and the largest term is exactly 1. One block per row, three strided passes
// (max, sum of exp, write).
#include "common.h"

using qvops::from_f32;
using qvops::kRowThreads;
using qvops::to_f32;

namespace {

// Row maximum and sum of exp(x - max), every thread of the block gets both.
template <typename T>
QV_DEVICE void row_max_and_sum(const T* x, uint32_t base, uint32_t cols, float& max_out, float& sum_out) {
  float m = qvops::kLowest;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) m = qv::max(m, to_f32(x[base + c]));
  m = qv::block_max(m);
  float s = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) s += qv::exp(to_f32(x[base + c]) - m);
  max_out = m;
  sum_out = qv::block_sum(s);
}

}  // namespace

// out[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r)
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void softmax(const T* x, T* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  float m = 0.0f, s = 0.0f;
  row_max_and_sum(x, base, cols, m, s);
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads)
    out[base + c] = from_f32<T>(qv::exp(to_f32(x[base + c]) - m) / s);
}

// out[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r))
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void log_softmax(const T* x, T* out, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  float m = 0.0f, s = 0.0f;
  row_max_and_sum(x, base, cols, m, s);
  float log_s = qv::log(s);
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads)
    out[base + c] = from_f32<T>(to_f32(x[base + c]) - m - log_s);
}

template void softmax<float>(const float*, float*, uint32_t, uint32_t);
template void log_softmax<float>(const float*, float*, uint32_t, uint32_t);
template void softmax<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void log_softmax<qv::bf16>(const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void softmax<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
template void log_softmax<qv::half>(const qv::half*, qv::half*, uint32_t, uint32_t);
