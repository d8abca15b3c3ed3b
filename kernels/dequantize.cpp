// Dequantisation of llama.cpp's block formats (the layouts kernels/matvec.cpp reads; docs/ops.md)
// into a float, bf16 or half matrix: what a prompt's matrix product runs on when its weights are
// quantized (quiver-llm's prefill: dequantize, then a 16-bit matmul on the matrix units).
//
// Element e of the rows x cols matrix is element e % per_block of block e / per_block: a row is
// cols / per_block whole blocks, so the blocks of all rows follow each other. A thread computes
// one element (grid-stride), reading its bytes through the block's 16-bit words (every block
// starts on a word, as in the matvecs) and its f16 scales through the same memory as half; the
// value is formed in float (d q and d scale q are exact there; q4_k's d scale q - dmin min
// rounds once) and rounded once to T.
#include "common.h"

using qvops::from_f32;
using qvops::kElemThreads;

namespace {

constexpr uint32_t kQBlock = 32, kQ8Bytes = 34, kQ4Bytes = 18;
constexpr uint32_t kKBlock = 256, kQ4KBytes = 144, kQ6KBytes = 210;

// Byte `i` of the weights (little-endian words).
QV_DEVICE uint32_t byte_at(const uint16_t* w, uint32_t i) { return (static_cast<uint32_t>(w[i / 2]) >> (8 * (i % 2))) & 255u; }

QV_DEVICE float q8_0_value(const uint16_t* w, const qv::half* scales, uint32_t e) {
  uint32_t base = (e / kQBlock) * kQ8Bytes;
  int32_t q = static_cast<int32_t>(byte_at(w, base + 2 + e % kQBlock) ^ 0x80u) - 128;
  return static_cast<float>(scales[base / 2]) * static_cast<float>(q);
}

QV_DEVICE float q4_0_value(const uint16_t* w, const qv::half* scales, uint32_t e) {
  uint32_t base = (e / kQBlock) * kQ4Bytes, l = e % kQBlock;
  uint32_t b = byte_at(w, base + 2 + l % 16);
  int32_t q = static_cast<int32_t>(l < 16 ? b & 15u : b >> 4) - 8;
  return static_cast<float>(scales[base / 2]) * static_cast<float>(q);
}

// q4_k: f16 d, f16 dmin, 12 scale bytes (six-bit scale and min per sub-block of 32), 128 nibble
// bytes; element 64c + i of sub-block 2c is the low nibble of nibble byte 32c + i, element
// 64c + 32 + i (sub-block 2c + 1) its high one.
QV_DEVICE float q4_k_value(const uint16_t* w, const qv::half* scales, uint32_t e) {
  uint32_t base = (e / kKBlock) * kQ4KBytes, r = e % kKBlock, s = r / 32;
  uint32_t scale, min;
  if (s < 4) {
    scale = byte_at(w, base + 4 + s) & 63u;
    min = byte_at(w, base + 8 + s) & 63u;
  } else {
    uint32_t packed = byte_at(w, base + 8 + s);
    scale = (packed & 15u) | ((byte_at(w, base + s) >> 6) << 4);
    min = (packed >> 4) | ((byte_at(w, base + 4 + s) >> 6) << 4);
  }
  uint32_t b = byte_at(w, base + 16 + 32 * (s / 2) + r % 32);
  uint32_t q = s % 2 == 0 ? b & 15u : b >> 4;
  float d = static_cast<float>(scales[base / 2]), dmin = static_cast<float>(scales[base / 2 + 1]);
  return d * static_cast<float>(scale) * static_cast<float>(q) - dmin * static_cast<float>(min);
}

// q6_k: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d. Element 128n + 32k + l: low 4 bits from
// ql byte 64n + 32 (k % 2) + l (low nibble for k < 2, high otherwise), top 2 bits from bits 2k,
// 2k + 1 of qh byte 32n + l, scale 8n + 2k + l / 16; w = d scale (q - 32).
// Element e from its super-block's first 208 bytes at byte `base` and its d (q6_k: d is the next
// two bytes; q6_kr, ops::repack_q6_k: every super-block's 208 bytes, then every d).
QV_DEVICE float q6_k_bytes_value(const uint16_t* w, uint32_t base, float d, uint32_t e) {
  uint32_t r = e % kKBlock;
  uint32_t n = r / 128, k = (r % 128) / 32, l = r % 32;
  uint32_t low = byte_at(w, base + 64 * n + 32 * (k % 2) + l);
  low = k < 2 ? low & 15u : low >> 4;
  uint32_t high = (byte_at(w, base + 128 + 32 * n + l) >> (2 * k)) & 3u;
  int32_t q = static_cast<int32_t>(low | (high << 4)) - 32;
  int32_t scale = static_cast<int32_t>(byte_at(w, base + 192 + 8 * n + 2 * k + l / 16) ^ 0x80u) - 128;
  return d * static_cast<float>(scale) * static_cast<float>(q);
}
QV_DEVICE float q6_k_value(const uint16_t* w, const qv::half* scales, uint32_t e) {
  uint32_t base = (e / kKBlock) * kQ6KBytes;
  return q6_k_bytes_value(w, base, static_cast<float>(scales[base / 2 + 104]), e);
}

}  // namespace

namespace {
// Every element e < n of the matrix through `value` (one of the above), grid-stride.
template <typename T, float (*value)(const uint16_t*, const qv::half*, uint32_t)>
QV_DEVICE void dequantize_all(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) {
  for (uint32_t e = qvops::grid_first(); e < n; e += qvops::grid_stride()) out[e] = from_f32<T>(value(w, scales, e));
}
}  // namespace

template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q8_0(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) { dequantize_all<T, q8_0_value>(w, scales, out, n); }
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q4_0(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) { dequantize_all<T, q4_0_value>(w, scales, out, n); }
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q4_k(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) { dequantize_all<T, q4_k_value>(w, scales, out, n); }
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q6_k(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) { dequantize_all<T, q6_k_value>(w, scales, out, n); }

// q6_kr: the n elements' super-blocks' 208 bytes each, then their f16 d.
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q6_kr(const uint16_t* w, const qv::half* scales, T* out, uint32_t n) {
  uint32_t d_at = (n / kKBlock) * (kQ6KBytes - 2) / 2;
  for (uint32_t e = qvops::grid_first(); e < n; e += qvops::grid_stride()) {
    uint32_t b = e / kKBlock;
    out[e] = from_f32<T>(q6_k_bytes_value(w, b * (kQ6KBytes - 2), static_cast<float>(scales[d_at + b]), e));
  }
}

// The repacked q4_0 / q8_0 layouts (kernels/matvec.cpp, "Repacked"): quant words then scales;
// element k of row r is in block b = k / 32 of chunk c = b / 32, whose quarter p sits with layout
// lane 4 (b % 8) + p at word i = (b % 32) / 8 of the lane's (two words a quarter for q8_0).
template <bool Q8>
QV_DEVICE float repacked_value(const uint32_t* q, const qv::half* scales, uint32_t rows, uint32_t cols, uint32_t e) {
  constexpr uint32_t WB = Q8 ? 8 : 4;
  uint32_t blocks = cols / kQBlock, r = e / cols, k = e % cols;
  uint32_t b = k / kQBlock, l = k % kQBlock, c = b / 32, i = (b % 32) / 8, g = b % 8;
  uint32_t j = Q8 ? l : l % 16;   // the quant's byte in the block
  uint32_t lane = 4 * g + (Q8 ? j / 8 : j / 4);
  uint32_t word = q[r * blocks * WB + c * 32 * WB + WB * lane + (Q8 ? 2 * i + (j % 8) / 4 : i)];
  uint32_t byte = (word >> (8 * (j % 4))) & 255u;
  // q4_0's nibbles are stored as q XOR 8 (ops::repack_q4_0).
  int32_t quant = Q8 ? static_cast<int32_t>(byte ^ 0x80u) - 128 : static_cast<int32_t>((l < 16 ? byte & 15u : byte >> 4) ^ 8u) - 8;
  float d = static_cast<float>(scales[2 * rows * blocks * WB + r * blocks + 32 * c + 4 * g + i]);
  return d * static_cast<float>(quant);
}

template <typename T, bool Q8>
QV_DEVICE void dequantize_repacked(const uint32_t* q, const qv::half* scales, T* out, uint32_t rows, uint32_t cols) {
  uint32_t n = rows * cols;
  for (uint32_t e = qvops::grid_first(); e < n; e += qvops::grid_stride())
    out[e] = from_f32<T>(repacked_value<Q8>(q, scales, rows, cols, e));
}

template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q4_0r(const uint32_t* q, const qv::half* scales, T* out, uint32_t rows,
                                                       uint32_t cols) { dequantize_repacked<T, false>(q, scales, out, rows, cols); }
template <typename T>
QV_KERNEL QV_BLOCK(kElemThreads) void dequantize_q8_0r(const uint32_t* q, const qv::half* scales, T* out, uint32_t rows,
                                                       uint32_t cols) { dequantize_repacked<T, true>(q, scales, out, rows, cols); }

template void dequantize_q8_0<float>(const uint16_t*, const qv::half*, float*, uint32_t);
template void dequantize_q4_0<float>(const uint16_t*, const qv::half*, float*, uint32_t);
template void dequantize_q4_k<float>(const uint16_t*, const qv::half*, float*, uint32_t);
template void dequantize_q6_k<float>(const uint16_t*, const qv::half*, float*, uint32_t);
template void dequantize_q8_0<qv::bf16>(const uint16_t*, const qv::half*, qv::bf16*, uint32_t);
template void dequantize_q4_0<qv::bf16>(const uint16_t*, const qv::half*, qv::bf16*, uint32_t);
template void dequantize_q4_k<qv::bf16>(const uint16_t*, const qv::half*, qv::bf16*, uint32_t);
template void dequantize_q6_k<qv::bf16>(const uint16_t*, const qv::half*, qv::bf16*, uint32_t);
template void dequantize_q8_0<qv::half>(const uint16_t*, const qv::half*, qv::half*, uint32_t);
template void dequantize_q4_0<qv::half>(const uint16_t*, const qv::half*, qv::half*, uint32_t);
template void dequantize_q4_k<qv::half>(const uint16_t*, const qv::half*, qv::half*, uint32_t);
template void dequantize_q6_k<qv::half>(const uint16_t*, const qv::half*, qv::half*, uint32_t);
template void dequantize_q6_kr<float>(const uint16_t*, const qv::half*, float*, uint32_t);
template void dequantize_q6_kr<qv::bf16>(const uint16_t*, const qv::half*, qv::bf16*, uint32_t);
template void dequantize_q6_kr<qv::half>(const uint16_t*, const qv::half*, qv::half*, uint32_t);
template void dequantize_q8_0r<float>(const uint32_t*, const qv::half*, float*, uint32_t, uint32_t);
template void dequantize_q4_0r<float>(const uint32_t*, const qv::half*, float*, uint32_t, uint32_t);
template void dequantize_q8_0r<qv::bf16>(const uint32_t*, const qv::half*, qv::bf16*, uint32_t, uint32_t);
template void dequantize_q4_0r<qv::bf16>(const uint32_t*, const qv::half*, qv::bf16*, uint32_t, uint32_t);
template void dequantize_q8_0r<qv::half>(const uint32_t*, const qv::half*, qv::half*, uint32_t, uint32_t);
template void dequantize_q4_0r<qv::half>(const uint32_t*, const qv::half*, qv::half*, uint32_t, uint32_t);
