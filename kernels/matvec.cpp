// Matrix-vector products for decoding (batch 1): y[n] = sum_k W[n, k] x[k] with W row-major
// [rows][cols] (a linear layer's weight, out_features x in_features). One subgroup per output
// row (below); lanes stride along the row (coalesced) and accumulate in float.
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
constexpr uint32_t kMatvecRows = 8;      // output rows per block (runtime/ops/ops.cpp sizes the grid)

namespace {

// The f16 scale at the start of a block, read byte by byte (blocks are 2-byte aligned at best).
QV_DEVICE float block_scale(const uint8_t* w, uint32_t block_start) {
  return qvops::f16_bits_to_f32(static_cast<uint32_t>(w[block_start]) |
                                (static_cast<uint32_t>(w[block_start + 1]) << 8));
}

QV_DEVICE float q8(const uint8_t* w, uint32_t i) { return static_cast<float>(static_cast<int8_t>(w[i])); }
QV_DEVICE float q4_low(uint32_t packed) { return static_cast<float>(static_cast<int32_t>(packed & 15u) - 8); }
QV_DEVICE float q4_high(uint32_t packed) { return static_cast<float>(static_cast<int32_t>(packed >> 4) - 8); }

}  // namespace

// A block of kRowThreads threads computes kMatvecRows outputs, one subgroup per row at a time
// (rows sg, sg + subgroups, ... of the block's group), reduced with qv::subgroup_sum: no shared
// memory and no barrier, so a block never waits for its slowest row. Correct for any subgroup
// size (a size-1 subgroup on the CPU walks the whole row alone). The host launches
// ceil(rows / kMatvecRows) blocks. W = 4 elements per access when cols % 4 == 0.
template <uint32_t W, typename T>
QV_DEVICE void matvec_rows(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t subgroups = (kRowThreads + sg - 1) / sg;
  // The step count is block-uniform and subgroup_sum sits outside any thread-dependent branch
  // (WGSL's uniformity analysis requires it); a subgroup without a row adds zeros.
  for (uint32_t step = 0; step < (kMatvecRows + subgroups - 1) / subgroups; ++step) {
    uint32_t row = qvops::block_row() * kMatvecRows + qv::thread_id_x() / sg + step * subgroups;
    bool valid = qv::thread_id_x() / sg + step * subgroups < kMatvecRows && row < rows;
    float acc = 0.0f;
    if (valid) {
      for (uint32_t c = lane * W; c < cols; c += sg * W)
        acc += qvops::sum4(qvops::load_w<W>(w + row * cols + c) * qvops::load_w<W>(x + c));
    }
    acc = qv::subgroup_sum(acc);
    if (valid && lane == 0) y[row] = from_f32<T>(acc);
  }
}

template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void matvec(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
  if (cols % 4 == 0) matvec_rows<4>(w, x, y, rows, cols);
  else matvec_rows<1>(w, x, y, rows, cols);
}

// The quantized forms, organised like matvec: lane l of a row's subgroup takes groups of 4
// elements g = l, l + sg, ...; group g is quants 4 (g % 8) .. + 3 of block g / 8, so consecutive
// lanes read consecutive bytes, x comes in as one float4, and the block's scale is decoded once
// per 4 elements: y += d * (q0 x0 + q1 x1 + q2 x2 + q3 x3).
QV_KERNEL QV_BLOCK(kRowThreads) void matvec_q8_0(const uint8_t* w, const float* x, float* y, uint32_t rows,
                                                 uint32_t cols) {
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t subgroups = (kRowThreads + sg - 1) / sg;
  for (uint32_t step = 0; step < (kMatvecRows + subgroups - 1) / subgroups; ++step) {
    uint32_t row = qvops::block_row() * kMatvecRows + qv::thread_id_x() / sg + step * subgroups;
    bool valid = qv::thread_id_x() / sg + step * subgroups < kMatvecRows && row < rows;
    float acc = 0.0f;
    if (valid) {
      uint32_t row_start = row * (cols / kQBlock) * kQ8Bytes;
      for (uint32_t g = lane; g < cols / 4; g += sg) {
        uint32_t block_start = row_start + (g / 8) * kQ8Bytes;
        uint32_t q = block_start + 2 + 4 * (g % 8);
        qv::float4 xv = qv::load<4>(x + 4 * g);
        float dot = q8(w, q) * xv[0] + q8(w, q + 1) * xv[1] + q8(w, q + 2) * xv[2] + q8(w, q + 3) * xv[3];
        acc += block_scale(w, block_start) * dot;
      }
    }
    acc = qv::subgroup_sum(acc);
    if (valid && lane == 0) y[row] = acc;
  }
}

// q4_0 group g % 8 = j holds bytes 2j, 2j + 1 of the block's 16: elements 2j, 2j + 1 (low
// nibbles) and 2j + 16, 2j + 17 (high nibbles).
QV_KERNEL QV_BLOCK(kRowThreads) void matvec_q4_0(const uint8_t* w, const float* x, float* y, uint32_t rows,
                                                 uint32_t cols) {
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t subgroups = (kRowThreads + sg - 1) / sg;
  for (uint32_t step = 0; step < (kMatvecRows + subgroups - 1) / subgroups; ++step) {
    uint32_t row = qvops::block_row() * kMatvecRows + qv::thread_id_x() / sg + step * subgroups;
    bool valid = qv::thread_id_x() / sg + step * subgroups < kMatvecRows && row < rows;
    float acc = 0.0f;
    if (valid) {
      uint32_t row_start = row * (cols / kQBlock) * kQ4Bytes;
      for (uint32_t g = lane; g < cols / 4; g += sg) {
        uint32_t block = g / 8, j = g % 8;
        uint32_t block_start = row_start + block * kQ4Bytes;
        uint32_t b0 = w[block_start + 2 + 2 * j], b1 = w[block_start + 3 + 2 * j];
        uint32_t e = block * kQBlock + 2 * j;
        qv::float2 lo = qv::load<2>(x + e), hi = qv::load<2>(x + e + 16);
        float dot = q4_low(b0) * lo[0] + q4_low(b1) * lo[1] + q4_high(b0) * hi[0] + q4_high(b1) * hi[1];
        acc += block_scale(w, block_start) * dot;
      }
    }
    acc = qv::subgroup_sum(acc);
    if (valid && lane == 0) y[row] = acc;
  }
}

template void matvec<float>(const float*, const float*, float*, uint32_t, uint32_t);
template void matvec<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void matvec<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t);
