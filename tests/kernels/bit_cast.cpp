// qv::bit_cast between float, int32_t and uint32_t, and the magic-number int-to-float
// conversion it exists for (kernels/matvec.cpp's dequantisation); and a nested '?:' of lvalues
// read as a value.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void bit_casts(const float* f, const uint32_t* u, uint32_t* f_bits, float* u_float,
                                      int32_t* f_exponent, float* low_byte, float* picked, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  f_bits[i] = qv::bit_cast<uint32_t>(f[i]);
  u_float[i] = qv::bit_cast<float>(u[i]);
  f_exponent[i] = (qv::bit_cast<int32_t>(f[i]) >> 23) - 127;   // arithmetic shift: the sign is kept
  low_byte[i] = qv::bit_cast<float>(0x4B000000u | (u[i] & 0xFFu)) - 8388608.0f;
  float low = low_byte[i], high = static_cast<float>(u[i] >> 24), zero = 0.0f;
  picked[i] = u[i] % 3u == 0 ? low : u[i] % 3u == 1 ? high : zero;
}

// 16-bit casts: f16 / bf16 bit patterns held as integers (a GGUF block's scale among its quants,
// say) read as the floats, and back.
QV_KERNEL QV_BLOCK(64) void bit_casts_16(const uint16_t* bits, const float* f, float* as_half, float* as_bf16,
                                         uint16_t* half_bits, uint16_t* bf16_bits, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  as_half[i] = static_cast<float>(qv::bit_cast<qv::half>(bits[i]));
  as_bf16[i] = static_cast<float>(qv::bit_cast<qv::bf16>(static_cast<int16_t>(bits[i])));
  half_bits[i] = qv::bit_cast<uint16_t>(qv::half(f[i]));
  bf16_bits[i] = static_cast<uint16_t>(qv::bit_cast<int16_t>(qv::bf16(f[i])));
}
