// Dequantization of the ggml tensor types the GGUF reader accepts (docs/llm.md, "Tensor types"):
// the host reference for quiver-llm's weights. Block layouts are ggml's; all fields
// little-endian.
#include <cstring>

#include "gguf.h"

namespace quiver::llm {
namespace {

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);   // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {   // subnormal: mant * 2^-24
    float f = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t load_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
float load_f16(const std::byte* p) { return f16_to_f32(load_u16(p)); }
uint8_t u8(const std::byte* p, size_t i) { return static_cast<uint8_t>(p[i]); }

// Q8_0: f16 d, then 32 int8 q; x = d * q.
void q8_0(const std::byte* b, float* y) {
  const float d = load_f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(u8(b + 2, i)));
}

// Q4_0: f16 d, then 16 bytes; byte j holds element j (low nibble) and j + 16 (high nibble),
// each stored with a +8 offset.
void q4_0(const std::byte* b, float* y) {
  const float d = load_f16(b);
  for (int j = 0; j < 16; ++j) {
    uint8_t q = u8(b + 2, j);
    y[j] = d * static_cast<float>((q & 0xF) - 8);
    y[j + 16] = d * static_cast<float>((q >> 4) - 8);
  }
}

// Q4_K: f16 d, f16 dmin, 12 bytes packing eight 6-bit (scale, min) pairs, 128 bytes of 4-bit q.
// Sub-block s (32 elements) is d * scale_s * q - dmin * min_s. Each 32 bytes of q hold two
// sub-blocks: the low nibbles the first, the high nibbles the second.
void q4_k(const std::byte* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const std::byte* sc = b + 4;
  const std::byte* qs = b + 16;
  auto scale_min = [&](int s, uint8_t& scale, uint8_t& min) {
    if (s < 4) {
      scale = u8(sc, s) & 63;
      min = u8(sc, s + 4) & 63;
    } else {   // low 4 bits in bytes 8..11, high 2 bits in the top of bytes 0..3 / 4..7
      scale = (u8(sc, s + 4) & 0xF) | ((u8(sc, s - 4) >> 6) << 4);
      min = (u8(sc, s + 4) >> 4) | ((u8(sc, s) >> 6) << 4);
    }
  };
  for (int pair = 0; pair < 4; ++pair) {
    uint8_t s0, m0, s1, m1;
    scale_min(2 * pair, s0, m0);
    scale_min(2 * pair + 1, s1, m1);
    const float d0 = d * s0, mn0 = dmin * m0, d1 = d * s1, mn1 = dmin * m1;
    for (int l = 0; l < 32; ++l) {
      uint8_t q = u8(qs, 32 * pair + l);
      y[64 * pair + l] = d0 * static_cast<float>(q & 0xF) - mn0;
      y[64 * pair + 32 + l] = d1 * static_cast<float>(q >> 4) - mn1;
    }
  }
}

// Q6_K: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales (one per 16
// elements), f16 d; x = d * scale * (q - 32). Each half (128 elements) uses 64 bytes of ql and 32
// of qh: element l + 32k of the half takes ql[l + 32 (k & 1)]'s nibble k / 2 and qh[l]'s bits 2k.
void q6_k(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* sc = b + 192;
  const float d = load_f16(b + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t h = u8(qh, 32 * half + l);
      for (int k = 0; k < 4; ++k) {
        const uint8_t lo = u8(ql, 64 * half + l + 32 * (k & 1));
        const int q = ((k < 2 ? lo & 0xF : lo >> 4) | (((h >> (2 * k)) & 3) << 4)) - 32;
        const int e = 128 * half + 32 * k + l;   // element within the block
        const float s = static_cast<float>(static_cast<int8_t>(u8(sc, e / 16)));
        y[e] = d * s * static_cast<float>(q);
      }
    }
  }
}

}  // namespace

void dequantize_row(GgmlType type, std::span<const std::byte> bytes, size_t n, float* out) {
  const TypeLayout& layout = type_layout(type);
  if (n % layout.block_elements != 0)
    throw GgufError(std::string("dequantize_row: ") + std::to_string(n) + " elements are not a whole number of " +
                    layout.name + " blocks of " + std::to_string(layout.block_elements));
  const size_t blocks = n / layout.block_elements;
  if (bytes.size() / layout.block_bytes < blocks)
    throw GgufError(std::string("dequantize_row: ") + std::to_string(n) + " " + layout.name + " elements need " +
                    std::to_string(blocks * layout.block_bytes) + " bytes, given " + std::to_string(bytes.size()));
  const std::byte* p = bytes.data();
  for (size_t i = 0; i < blocks; ++i, p += layout.block_bytes, out += layout.block_elements) {
    switch (type) {
      case GgmlType::F32: std::memcpy(out, p, 4); break;
      case GgmlType::F16: *out = load_f16(p); break;
      case GgmlType::BF16: {
        uint32_t bits = uint32_t{load_u16(p)} << 16;
        std::memcpy(out, &bits, 4);
        break;
      }
      case GgmlType::Q8_0: q8_0(p, out); break;
      case GgmlType::Q4_0: q4_0(p, out); break;
      case GgmlType::Q4_K: q4_k(p, out); break;
      case GgmlType::Q6_K: q6_k(p, out); break;
    }
  }
}

}  // namespace quiver::llm
