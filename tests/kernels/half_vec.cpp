// qv::half, qv::bf16 (explicit round-to-nearest-even conversions, buffers, a half scalar
// parameter) and qv::vec (wide loads and stores, element access, element-wise arithmetic,
// vectors in buffers and in shared memory).
#include <quiver/kernel.h>

// float -> half / bf16 -> float, element by element.
QV_KERNEL QV_BLOCK(128) void convert_16bit(const float* in, qv::half* h, qv::bf16* b, float* h_back,
                                           float* b_back, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  qv::half hv = qv::half(in[i]);
  qv::bf16 bv(in[i]);
  h[i] = hv;
  b[i] = bv;
  h_back[i] = static_cast<float>(hv);
  b_back[i] = static_cast<float>(b[i]);
}

// Every 16-bit pattern, read as half and as bf16 (exact widening).
QV_KERNEL QV_BLOCK(256) void widen_16bit(const qv::half* h, const qv::bf16* b, float* from_h, float* from_b,
                                         uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) {
    from_h[i] = static_cast<float>(h[i]);
    from_b[i] = static_cast<float>(b[i]);
  }
}

// y = half(x * s) with a half scalar parameter, through a QV_DEVICE helper taking half.
QV_DEVICE float scaled(qv::half x, qv::half s) { return static_cast<float>(x) * static_cast<float>(s); }
QV_KERNEL QV_BLOCK(64) void scale_half(qv::half* y, const qv::half* x, qv::half s, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i < n) y[i] = qv::half(scaled(x[i], s));
}

// The disassembly test's kernel: one 16-byte load and one 16-byte store per thread.
QV_KERNEL QV_BLOCK(256) void float4_copy(const float* in, float* out, uint32_t n4) {
  uint32_t i = qv::global_id_x();
  if (i < n4) qv::store(out + 4 * i, qv::load<4>(in + 4 * i));
}

// Vectors every way the language allows: buffers of vec, load/store of scalar buffers,
// element reads and writes, arithmetic with vectors and scalars, a vec in shared memory.
QV_KERNEL QV_BLOCK(64) void vec_mix(const qv::float4* a, const float* b, const qv::half8* h, const qv::int4* k,
                                    qv::float4* out, float* out8, qv::bf16x8* out_b, qv::int4* out_k, uint32_t n) {
  qv::shared<qv::float4, 64> tile;
  uint32_t t = qv::thread_id_x();
  uint32_t i = qv::global_id_x();
  qv::float4 va = i < n ? a[i] : qv::float4(0.0f);
  tile[t] = va * 2.0f;
  qv::barrier();
  if (i >= n) return;
  qv::float4 vb = qv::load<4>(b + 4 * i);
  qv::float4 other = tile[(t + 1) % 64];
  qv::float4 r = (va + vb) * other - 1.0f;
  r /= qv::float4(1.0f, 2.0f, 4.0f, 8.0f);
  r[2] = r[2] + va[0];
  out[i] = -r;
  qv::half8 hv = h[i];
  qv::vec<float, 8> f8;
  f8[0] = static_cast<float>(hv[0]); f8[1] = static_cast<float>(hv[1]);
  f8[2] = static_cast<float>(hv[2]); f8[3] = static_cast<float>(hv[3]);
  f8[4] = static_cast<float>(hv[4]); f8[5] = static_cast<float>(hv[5]);
  f8[6] = static_cast<float>(hv[6]); f8[7] = static_cast<float>(hv[7]);
  f8 = f8 * f8 + 0.5f;
  qv::store(out8 + 8 * i, f8);
  out_b[i] = qv::bf16x8(qv::bf16(f8[0]), qv::bf16(f8[1]), qv::bf16(f8[2]), qv::bf16(f8[3]),
                        qv::bf16(f8[4]), qv::bf16(f8[5]), qv::bf16(f8[6]), qv::bf16(f8[7]));
  qv::int4 kv = k[i];
  out_k[i] = kv / qv::int4(3) + 2 * kv - qv::int4(1, -2, 3, -4);
}
