// Row normalisations: rms_norm, layer_norm and add_rms_norm (residual add fused with rms_norm).
// One block per row; each thread walks the row with stride kRowThreads, so any cols works and
// consecutive threads touch consecutive elements (coalesced). Statistics are accumulated in
// float and combined with qv::block_sum.
#include "common.h"

using qvops::from_f32;
using qvops::kRowThreads;
using qvops::to_f32;

// out[r, c] = x[r, c] * w[c] / sqrt(mean_c(x[r, c]^2) + eps)
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void rms_norm(const T* x, const T* w, T* out, uint32_t rows, uint32_t cols,
                                              float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;   // uniform per block
  uint32_t base = row * cols;
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
    float v = to_f32(x[base + c]);
    squares += v * v;
  }
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads)
    out[base + c] = from_f32<T>(to_f32(x[base + c]) * inv_rms * to_f32(w[c]));
}

// out[r, c] = (x[r, c] - mean) / sqrt(var + eps) * w[c] + b[c]; two passes over the row (mean,
// then the variance around it), which avoids the cancellation of E[x^2] - E[x]^2.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void layer_norm(const T* x, const T* w, const T* b, T* out, uint32_t rows,
                                                uint32_t cols, float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  float sum = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) sum += to_f32(x[base + c]);
  float mean = qv::block_sum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
    float d = to_f32(x[base + c]) - mean;
    squares += d * d;
  }
  float inv_std = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads)
    out[base + c] = from_f32<T>((to_f32(x[base + c]) - mean) * inv_std * to_f32(w[c]) + to_f32(b[c]));
}

// sum = x + residual (stored as T: the next layer's residual), out = rms_norm(sum) * w.
// The statistics use the stored (rounded) sum, so the result equals a separate add followed by
// rms_norm. Each thread re-reads only the elements it wrote itself: no barrier needed.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void add_rms_norm(const T* x, const T* residual, const T* w, T* sum, T* out,
                                                  uint32_t rows, uint32_t cols, float eps) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  float squares = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
    T s = from_f32<T>(to_f32(x[base + c]) + to_f32(residual[base + c]));
    sum[base + c] = s;
    float v = to_f32(s);
    squares += v * v;
  }
  float inv_rms = qv::rsqrt(qv::block_sum(squares) / static_cast<float>(cols) + eps);
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads)
    out[base + c] = from_f32<T>(to_f32(sum[base + c]) * inv_rms * to_f32(w[c]));
}

template void rms_norm<float>(const float*, const float*, float*, uint32_t, uint32_t, float);
template void layer_norm<float>(const float*, const float*, const float*, float*, uint32_t, uint32_t, float);
template void add_rms_norm<float>(const float*, const float*, const float*, float*, float*, uint32_t, uint32_t,
                                  float);
template void rms_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t, float);
template void layer_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t,
                                   float);
template void add_rms_norm<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, qv::bf16*, qv::bf16*, uint32_t,
                                     uint32_t, float);
template void rms_norm<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t, float);
template void layer_norm<qv::half>(const qv::half*, const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t,
                                   float);
template void add_rms_norm<qv::half>(const qv::half*, const qv::half*, const qv::half*, qv::half*, qv::half*, uint32_t,
                                     uint32_t, float);
