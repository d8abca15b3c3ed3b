// Matrix-vector products for decoding (batch 1): y[n] = sum_k W[n, k] x[k] with W row-major
// [rows][cols] (a linear layer's weight, out_features x in_features). One block per output row;
// threads stride along the row (coalesced), accumulate in float and combine with qv::block_sum.
//
// The block-quantized forms keep llama.cpp's byte layouts, so GGUF tensors can be uploaded as
// they are (one row = cols / 32 consecutive blocks):
//   q8_0: 34 bytes per block = f16 scale d, then 32 int8 q;                w = d * q
//   q4_0: 18 bytes per block = f16 scale d, then 16 bytes; byte j holds element j in its low
//         nibble and element j + 16 in its high nibble;                    w = d * (nibble - 8)
// Dequantisation happens in the kernel; d * q is exact in float (11-bit by 8-bit significands).
#include "common.h"

using qvops::from_f32;
using qvops::kRowThreads;
using qvops::to_f32;

constexpr uint32_t kQBlock = 32;         // elements per quantization block
constexpr uint32_t kQ8Bytes = 34;        // bytes per q8_0 block
constexpr uint32_t kQ4Bytes = 18;        // bytes per q4_0 block

template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void matvec(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t base = row * cols;
  float acc = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) acc += to_f32(w[base + c]) * to_f32(x[c]);
  acc = qv::block_sum(acc);
  if (qv::thread_id_x() == 0) y[row] = from_f32<T>(acc);
}

namespace {
// The f16 scale at the start of a block, read byte by byte (blocks are 2-byte aligned at best).
QV_DEVICE float block_scale(const uint8_t* w, uint32_t block_start) {
  return qvops::f16_bits_to_f32(static_cast<uint32_t>(w[block_start]) |
                                (static_cast<uint32_t>(w[block_start + 1]) << 8));
}
}  // namespace

// Thread t takes elements t, t + 256, ...: consecutive threads read consecutive quant bytes.
QV_KERNEL QV_BLOCK(kRowThreads) void matvec_q8_0(const uint8_t* w, const float* x, float* y, uint32_t rows,
                                                 uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t row_start = row * (cols / kQBlock) * kQ8Bytes;
  float acc = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
    uint32_t block_start = row_start + (c / kQBlock) * kQ8Bytes;
    int32_t q = static_cast<int8_t>(w[block_start + 2 + c % kQBlock]);
    acc += block_scale(w, block_start) * static_cast<float>(q) * x[c];
  }
  acc = qv::block_sum(acc);
  if (qv::thread_id_x() == 0) y[row] = acc;
}

QV_KERNEL QV_BLOCK(kRowThreads) void matvec_q4_0(const uint8_t* w, const float* x, float* y, uint32_t rows,
                                                 uint32_t cols) {
  uint32_t row = qvops::block_row();
  if (row >= rows) return;
  uint32_t row_start = row * (cols / kQBlock) * kQ4Bytes;
  float acc = 0.0f;
  for (uint32_t c = qv::thread_id_x(); c < cols; c += kRowThreads) {
    uint32_t block_start = row_start + (c / kQBlock) * kQ4Bytes;
    uint32_t j = c % kQBlock;
    uint32_t packed = w[block_start + 2 + (j & 15u)];
    int32_t q = static_cast<int32_t>(j < 16 ? (packed & 15u) : (packed >> 4)) - 8;
    acc += block_scale(w, block_start) * static_cast<float>(q) * x[c];
  }
  acc = qv::block_sum(acc);
  if (qv::thread_id_x() == 0) y[row] = acc;
}

template void matvec<float>(const float*, const float*, float*, uint32_t, uint32_t);
template void matvec<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void matvec<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t);
