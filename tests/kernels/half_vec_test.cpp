// qv::half / qv::bf16 conversions and buffers, and qv::vec, against host references: half
// through the host compiler's binary16 type (kernels_common.h: host_half), bf16 through a
// nearest-value search in double, vectors through plain float/int arithmetic.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "kernels_common.h"

namespace {

using namespace kernels_test;

float bf16_value(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

// bfloat16 nearest to x, ties to even: compare the two neighbours in double.
uint16_t bf16_bits(float x) {
  if (std::isnan(x)) return 0x7fc0;
  uint32_t u = std::bit_cast<uint32_t>(x);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;   // same sign, magnitude below / above
  double dlo = std::bit_cast<float>(lo);
  double dhi = (hi & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), x) : double(std::bit_cast<float>(hi));
  double below = std::fabs(double(x) - dlo), above = std::fabs(dhi - double(x));
  uint32_t pick = below < above ? lo : above < below ? hi : ((lo >> 16) & 1 ? hi : lo);
  return static_cast<uint16_t>(pick >> 16);
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }
bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool is_nan_bf16(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

// Values that exercise rounding: uniform, log-uniform magnitudes, exact ties of both formats,
// the overflow boundary, and the special values. No f32 subnormals (NVIDIA's Vulkan driver
// flushes them; docs/numerics.md).
std::vector<float> conversion_inputs(size_t n) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 1e10f, -1e10f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
                          0x1p-26f, std::numeric_limits<float>::max(), 0x1.fffffep127f};
  std::uniform_int_distribution<uint32_t> bits16(0, 0xffff);
  std::uniform_real_distribution<float> uni(-70000.0f, 70000.0f), expo(-30.0f, 17.0f);
  while (v.size() < n) {
    switch (v.size() % 5) {
      case 0: v.push_back(uni(rng())); break;
      case 1: v.push_back((v.size() & 8 ? -1.0f : 1.0f) * std::exp2(expo(rng()))); break;
      case 2: {   // midway between two adjacent halves (a tie), or just off it
        uint16_t h = bits16(rng()) & 0x7bff;
        float mid = (half_value(h) + half_value(h + 1)) / 2;   // exact in float
        v.push_back(v.size() & 16 ? std::nextafter(mid, 0.0f) : mid);
        break;
      }
      case 3: {   // a bf16 tie: the dropped 16 bits are exactly 0x8000
        uint32_t u = (std::uniform_int_distribution<uint32_t>(0x00800000u, 0x7f7fffffu)(rng()) & 0xffff0000u) | 0x8000u;
        v.push_back(std::bit_cast<float>(u | (v.size() & 32 ? 0x80000000u : 0u)));
        break;
      }
      default: v.push_back(std::bit_cast<float>(std::uniform_int_distribution<uint32_t>(0x00800000u, 0x7f7fffffu)(rng())));
    }
  }
  return v;
}

TEST(HalfBf16, ConversionsRoundToNearestEven) {
  auto in = conversion_inputs(1 << 16);
  uint32_t n = in.size();
  auto bin = upload(in);
  auto h = poisoned<quiver::half>(n);
  auto b = poisoned<quiver::bf16>(n);
  auto hb = poisoned<float>(n), bb = poisoned<float>(n);
  env().mod.kernel("convert_16bit").launch(quiver::Grid{(n + 127) / 128}, bin, h, b, hb, bb, n);
  auto oh = download(h);
  auto ob = download(b);
  auto ohb = download(hb), obb = download(bb);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 10; ++i) {
    uint16_t rh = half_bits(in[i]), rb = bf16_bits(in[i]);
    bool ok = (oh[i].bits == rh || (is_nan_half(rh) && is_nan_half(oh[i].bits))) &&
              (ob[i].bits == rb || (is_nan_bf16(rb) && is_nan_bf16(ob[i].bits))) &&
              same_float(ohb[i], half_value(rh)) && same_float(obb[i], bf16_value(rb));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << std::hexfloat << "x=" << in[i] << std::hex << ": half 0x" << oh[i].bits << " (want 0x" << rh
                    << "), bf16 0x" << ob[i].bits << " (want 0x" << rb << "), back " << ohb[i] << " / " << obb[i];
    }
  }
}

TEST(HalfBf16, EveryBitPatternWidensExactly) {
  const uint32_t n = 65536;
  std::vector<quiver::half> h(n);
  std::vector<quiver::bf16> b(n);
  for (uint32_t i = 0; i < n; ++i) h[i].bits = b[i].bits = static_cast<uint16_t>(i);
  auto bh = upload(h);
  auto bb = upload(b);
  auto fh = poisoned<float>(n), fb = poisoned<float>(n);
  env().mod.kernel("widen_16bit").launch(quiver::Grid{n / 256}, bh, bb, fh, fb, n);
  auto oh = download(fh), ob = download(fb);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 10; ++i) {
    bool bf16_subnormal = (i & 0x7f80) == 0 && (i & 0x7f);
    if (!same_float(oh[i], half_value(i))) {
      ++bad;
      ADD_FAILURE() << std::hex << "half 0x" << i << " -> " << std::hexfloat << oh[i] << ", want " << half_value(i);
    }
    if (!same_float(ob[i], bf16_value(i)) && !(bf16_subnormal && ob[i] == 0.0f && env().dev.backend_name() == "vulkan")) {
      ++bad;
      ADD_FAILURE() << std::hex << "bf16 0x" << i << " -> " << std::hexfloat << ob[i] << ", want " << bf16_value(i);
    }
  }
}

// qv::bit_cast between 16-bit types (tests/kernels/bit_cast.cpp): every bit pattern held as an
// integer reads as the half / bf16 it encodes, and a rounded half / bf16 reads back as its bits.
TEST(HalfBf16, BitCastBetween16BitTypes) {
  const uint32_t n = 65536;
  std::vector<uint16_t> bits(n);
  for (uint32_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(i);
  auto in = conversion_inputs(n);
  auto bbits = upload(bits);
  auto bin = upload(in);
  auto as_half = poisoned<float>(n), as_bf16 = poisoned<float>(n);
  auto half_out = poisoned<uint16_t>(n), bf16_out = poisoned<uint16_t>(n);
  env().mod.kernel("bit_casts_16").launch(quiver::Grid{n / 64}, bbits, bin, as_half, as_bf16, half_out, bf16_out, n);
  auto oh = download(as_half), ob = download(as_bf16);
  auto ohb = download(half_out), obb = download(bf16_out);
  int bad = 0;
  for (uint32_t i = 0; i < n && bad < 10; ++i) {
    bool bf16_subnormal = (i & 0x7f80) == 0 && (i & 0x7f);   // flushed by NVIDIA's Vulkan driver (as above)
    uint16_t rh = half_bits(in[i]), rb = bf16_bits(in[i]);
    bool ok = same_float(oh[i], half_value(i)) &&
              (same_float(ob[i], bf16_value(i)) || (bf16_subnormal && ob[i] == 0.0f && env().dev.backend_name() == "vulkan")) &&
              (ohb[i] == rh || (is_nan_half(rh) && is_nan_half(ohb[i]))) &&
              (obb[i] == rb || (is_nan_bf16(rb) && is_nan_bf16(obb[i])));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << std::hex << "bits 0x" << i << " -> " << std::hexfloat << oh[i] << " / " << ob[i] << " (want "
                    << half_value(i) << " / " << bf16_value(i) << "); x=" << in[i] << std::hex << " -> 0x" << ohb[i]
                    << " / 0x" << obb[i] << " (want 0x" << rh << " / 0x" << rb << ")";
    }
  }
}

TEST(HalfBf16, HalfScalarParameterAndDeviceHelper) {
  const uint32_t n = 5000;
  std::vector<quiver::half> x(n);
  for (auto& v : x) v.bits = half_bits(random_floats(1, -100, 100)[0]);
  quiver::half s{half_bits(random_floats(1, -3, 3)[0])};
  auto bx = upload(x);
  auto by = poisoned<quiver::half>(n);
  env().mod.kernel("scale_half").launch(quiver::Grid{(n + 63) / 64}, by, bx, s, n);
  auto y = download(by);
  for (uint32_t i = 0; i < n; ++i)   // the float product of two halves is exact: one rounding
    ASSERT_EQ(y[i].bits, half_bits(half_value(x[i].bits) * half_value(s.bits))) << "i=" << i;
}

TEST(Vectors, Float4CopyIsWide) {
  const uint32_t n4 = 40001;
  auto in = random_floats(4 * n4, -1e6f, 1e6f);
  auto bin = upload(in);
  auto out = poisoned<float>(4 * n4);
  env().mod.kernel("float4_copy").launch(quiver::Grid{(n4 + 255) / 256}, bin, out, n4);
  auto o = download(out);
  for (uint32_t i = 0; i < 4 * n4; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(o[i]), std::bit_cast<uint32_t>(in[i])) << "i=" << i;
}

TEST(Vectors, BuffersElementsArithmeticAndSharedMemory) {
  const uint32_t n = 1000;   // not a multiple of the block: the tail block has idle threads
  auto a = random_floats(4 * n, -4, 4), b = random_floats(4 * n, -4, 4), hf = random_floats(8 * n, -30, 30);
  std::vector<quiver::half> h(8 * n);
  for (size_t i = 0; i < h.size(); ++i) h[i].bits = half_bits(hf[i]);
  auto k = random_ints<int32_t>(4 * n, -1000000, 1000000);
  auto ba = upload(a), bb = upload(b);
  auto bk = upload(k);
  auto bh = upload(h);
  auto out = poisoned<float>(4 * n), out8 = poisoned<float>(8 * n);
  auto out_b = poisoned<quiver::bf16>(8 * n);
  auto out_k = poisoned<int32_t>(4 * n);
  env().mod.kernel("vec_mix").launch(quiver::Grid{(n + 63) / 64}, ba, bb, bh, bk, out, out8, out_b, out_k, n);
  auto o = download(out), o8 = download(out8);
  auto ok = download(out_k);
  auto ob = download(out_b);
  const float div[4] = {1, 2, 4, 8}, sub[4] = {1, -2, 3, -4};
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t j = (i / 64) * 64 + (i % 64 + 1) % 64;
    for (int c = 0; c < 4; ++c) {
      double other = j < n ? 2.0 * a[4 * j + c] : 0.0;
      double r = ((double(a[4 * i + c]) + b[4 * i + c]) * other - 1.0) / div[c];
      if (c == 2) r += a[4 * i];
      ASSERT_NEAR(o[4 * i + c], -r, 2e-6 * (1 + std::fabs(r))) << "i=" << i << " c=" << c;
      int32_t kv = k[4 * i + c];
      ASSERT_EQ(ok[4 * i + c], kv / 3 + 2 * kv - int32_t(sub[c])) << "i=" << i << " c=" << c;
    }
    for (int c = 0; c < 8; ++c) {
      double hv = half_value(h[8 * i + c].bits);
      ASSERT_NEAR(o8[8 * i + c], hv * hv + 0.5, 1e-6 * (hv * hv + 0.5)) << "i=" << i << " c=" << c;
      ASSERT_EQ(ob[8 * i + c].bits, bf16_bits(o8[8 * i + c])) << "i=" << i << " c=" << c;
    }
  }
}

}  // namespace
