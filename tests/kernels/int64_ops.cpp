// 64-bit integer arithmetic on every target: carries, products, both divisions, shifts by any
// amount, comparisons, min/max, float conversions and a 64-bit scalar. WGSL has no 64-bit type
// and emulates every one of these with pairs of 32-bit words (compiler/targets/wgsl/wgsl_int64.cpp).
// Sums and products that may overflow are computed unsigned (wrapping, defined); signed ones use
// inputs that cannot overflow. The host reference is tests/kernels/int64_ref.h.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(64) void int64_ops(const int64_t* a, const int64_t* b, const float* f, int64_t* out, float* fout,
                                      int64_t k, uint32_t n) {
  uint32_t i = qv::global_id_x();
  if (i >= n) return;
  int64_t x = a[i], y = b[i];
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  uint32_t s = static_cast<uint32_t>(y) & 63u;
  uint32_t o = 16u * i;
  out[o + 0] = static_cast<int64_t>(ux + uy);
  out[o + 1] = static_cast<int64_t>(ux - uy);
  out[o + 2] = static_cast<int64_t>(ux * uy);
  out[o + 3] = y != 0 ? x / y : 0;
  out[o + 4] = y != 0 ? x % y : 0;
  out[o + 5] = static_cast<int64_t>(uy != 0 ? ux / uy : 0);
  out[o + 6] = static_cast<int64_t>(uy != 0 ? ux % uy : 0);
  out[o + 7] = static_cast<int64_t>(ux << s);
  out[o + 8] = x >> s;
  out[o + 9] = static_cast<int64_t>(ux >> s);
  out[o + 10] = (x & y) ^ (x | k);
  out[o + 11] = (x < y ? 1 : 0) + (ux < uy ? 2 : 0) + (x <= k ? 4 : 0) + (x == y ? 8 : 0) + (ux >= uy ? 16 : 0);
  out[o + 12] = static_cast<int64_t>(static_cast<uint64_t>(x < y ? x : y) ^ (ux > uy ? ux : uy));
  float v = f[i];
  out[o + 13] = static_cast<int64_t>(v);
  out[o + 14] = static_cast<int64_t>(static_cast<uint64_t>(v < 0.0f ? -v : v));
  out[o + 15] = static_cast<int64_t>(ux * static_cast<uint64_t>(k) + i - static_cast<uint64_t>(static_cast<int32_t>(x)));
  fout[2 * i] = static_cast<float>(x);
  fout[2 * i + 1] = static_cast<float>(ux);
}
