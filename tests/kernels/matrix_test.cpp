// tests/kernels/matrix_tiles.cpp (the matrix-unit builtins) against an fp64 host product of the
// same 16-bit inputs, on the backend under test, for both input types and both B layouts.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "kernels_common.h"

namespace kernels_test {
namespace {

float bf16_value(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }
uint16_t bf16_round(float x) {   // round to nearest even (inputs here are finite)
  uint32_t u = std::bit_cast<uint32_t>(x);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

template <typename T> constexpr bool kIsBf16 = std::is_same_v<T, quiver::bf16>;
template <typename T> double value16(uint16_t bits) { return kIsBf16<T> ? bf16_value(bits) : half_value(bits); }
// Random values rounded to T (nearest even).
template <typename T> std::vector<T> random16(size_t n, float lo, float hi) {
  std::vector<float> f = random_floats(n, lo, hi);
  std::vector<T> out(n);
  for (size_t i = 0; i < n; ++i) out[i].bits = kIsBf16<T> ? bf16_round(f[i]) : half_bits(f[i]);
  return out;
}

// got (float) = alpha * (A B + c0(i, j)) and got16 (T) = that + 1 for A (m x k) and B (k x n, or
// n x k when transposed), against the fp64 product of the same 16-bit inputs; both outputs one
// poisoned element longer than m x n.
template <typename T>
void expect_product(const std::string& name, const std::vector<T>& a, const std::vector<T>& b, bool b_transposed,
                    const std::function<double(size_t, size_t)>& c0, float alpha, uint32_t m, uint32_t n, uint32_t k,
                    const std::vector<float>& got, const std::vector<T>& got16) {
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      double sum = c0(i, j), mag = std::fabs(sum);
      for (uint32_t kk = 0; kk < k; ++kk) {
        double bv = value16<T>(b_transposed ? b[size_t(j) * k + kk].bits : b[size_t(kk) * n + j].bits);
        double p = value16<T>(a[size_t(i) * k + kk].bits) * bv;
        sum += p;
        mag += std::fabs(p);
      }
      double want = alpha * sum;
      // f32 accumulation of exact products in any order: k + 1 roundings of at most 2^-24 of the magnitude.
      double bound = (k + 4) * std::ldexp(mag * alpha, -24) + 1e-30;
      float g = got[size_t(i) * n + j];
      ASSERT_LE(std::fabs(g - want), bound) << name << (b_transposed ? " B^T" : " B") << " at (" << i << ", " << j
                                            << "): " << g << " want " << want;
      double g16 = value16<T>(got16[size_t(i) * n + j].bits);
      double bound16 = bound + std::fabs(want + 1) * (kIsBf16<T> ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11));
      ASSERT_LE(std::fabs(g16 - (want + 1)), bound16) << name << " 16-bit store at (" << i << ", " << j << "): " << g16
                                                      << " want " << want + 1;
    }
  EXPECT_EQ(std::bit_cast<uint32_t>(got[size_t(m) * n]), 0xA5A5A5A5u) << name << ": written past the end";
  EXPECT_EQ(got16[size_t(m) * n].bits, 0xA5A5u) << name << ": written past the end";
}

template <typename T>
void check_matrix_tiles(bool b_transposed) {
  const uint32_t m = 48, n = 80, k = 64;   // 3 bands, 5 tiles a band (split unevenly), 4 k-steps
  std::vector<T> a = random16<T>(size_t(m) * k, -2, 2);
  std::vector<T> b = random16<T>(size_t(k) * n, -2, 2);   // K x N, or N x K when transposed
  std::vector<float> c0 = random_floats(size_t(m) * n, -4, 4);
  float alpha = random_floats(1, 0.5f, 1.5f)[0];
  auto ba = upload(a), bb = upload(b);
  auto bc = upload(c0);
  auto out = poisoned<float>(size_t(m) * n + 1);
  auto out16 = poisoned<T>(size_t(m) * n + 1);
  std::string name = std::string("matrix_tiles<") + (kIsBf16<T> ? "bf16" : "half") + ">";
  env().mod.kernel(name).launch(quiver::Grid{m / 16}, ba, bb, bc, out, out16, n, k, uint32_t(b_transposed), alpha);
  env().dev.synchronize();
  expect_product<T>(name, a, b, b_transposed, [&](size_t i, size_t j) { return double(c0[i * n + j]); }, alpha, m, n,
                    k, download(out), download(out16));
}

// matrix_softmax<T>: rows of 32 scores -> row max, row sum of exp2(s - max), element-wise math,
// and the probabilities (rounded to T by to_matrix_a) times V over the row sum.
template <typename T>
void check_matrix_softmax() {
  constexpr bool is_bf16 = std::is_same_v<T, quiver::bf16>;
  auto value = [](uint16_t b) { return is_bf16 ? bf16_value(b) : half_value(b); };
  const double u16 = is_bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);   // T's unit roundoff
  const uint32_t bands = 3, rows = 16 * bands;
  std::vector<float> s = random_floats(size_t(rows) * 32, -6, 6);
  std::vector<T> v(32 * 16);
  std::vector<float> vf = random_floats(v.size(), -1, 1);
  for (size_t i = 0; i < v.size(); ++i) v[i].bits = is_bf16 ? bf16_round(vf[i]) : half_bits(vf[i]);
  float scale = random_floats(1, 0.5f, 1.0f)[0];
  auto bs = upload(s);
  auto bv = upload(v);
  size_t n = size_t(rows) * 16;
  auto out = poisoned<float>(n + 1), row_m = poisoned<float>(n + 1), row_l = poisoned<float>(n + 1),
       elem = poisoned<float>(n + 1);
  std::string name = std::string("matrix_softmax<") + (is_bf16 ? "bf16" : "half") + ">";
  // Built for PTX, CPU and SPIR-V's cooperative-matrix image only (tests/kernels/matrix_tiles.cpp
  // says why); there, half tiles only.
  const std::string backend = env().dev.backend_name();
  // Its SPIR-V image (one per kernel) is taken where the device offers what it requires; where it
  // does not, the load says why.
  const bool coop_image = env().mod.has_kernel(name);
  if (backend != "cuda" && backend != "cpu") {
    if (!coop_image)
      EXPECT_NE(std::string(env().mod.backend_image()).find("not vulkan1.3_coopmat needs"), std::string::npos)
          << env().mod.backend_image();
    if (!coop_image) GTEST_SKIP() << name << " is built for PTX, CPU and the cooperative-matrix SPIR-V image only";
    if (is_bf16) GTEST_SKIP() << name << ": bf16 tiles take the portable fallback in the cooperative-matrix image";
  }
  env().mod.kernel(name).launch(quiver::Grid{bands}, bs, bv, scale, out, row_m, row_l, elem);
  env().dev.synchronize();
  auto got = download(out), got_m = download(row_m), got_l = download(row_l), got_e = download(elem);
  for (uint32_t i = 0; i < rows; ++i) {
    float m = -INFINITY;   // the device's scaled scores are float products, as here
    for (uint32_t k = 0; k < 32; ++k) m = std::max(m, s[i * 32 + k] * scale);
    double l = 0, p[32];
    for (uint32_t k = 0; k < 32; ++k) l += p[k] = std::exp2(double(s[i * 32 + k] * scale) - m);
    for (uint32_t j = 0; j < 16; ++j) {
      size_t at = size_t(i) * 16 + j;
      ASSERT_EQ(got_m[at], m) << name << " row_max at (" << i << ", " << j << ")";
      // exp2 within 32 ulp, 32 float additions.
      ASSERT_LE(std::fabs(got_l[at] - l), 80 * std::ldexp(l, -24)) << name << " row_sum at (" << i << ", " << j << ")";
      double o = 0, mag = 0;
      for (uint32_t k = 0; k < 32; ++k) {
        o += p[k] * value(v[k * 16 + j].bits);
        mag += p[k] * std::fabs(value(v[k * 16 + j].bits));
      }
      // Each weight rounded to T (u16), exp2 and sums in float, then the division by l.
      double bound = (u16 + 120 * std::ldexp(1.0, -24)) * mag / l + std::ldexp(std::fabs(o / l), -22);
      ASSERT_LE(std::fabs(got[at] - o / l), bound) << name << " out at (" << i << ", " << j << "): " << got[at]
                                                   << " want " << o / l;
      float s0 = s[i * 32 + j] * scale, s1 = s[i * 32 + 16 + j] * scale;
      double e = std::exp(double(std::min(s0, s1))) * s1;
      ASSERT_LE(std::fabs(got_e[at] - e), 40 * std::ldexp(std::fabs(e), -24)) << name << " exp(min) * s at (" << i
                                                                               << ", " << j << ")";
    }
  }
  for (auto* b : {&got, &got_m, &got_l, &got_e})
    EXPECT_EQ(std::bit_cast<uint32_t>((*b)[n]), 0xA5A5A5A5u) << name << ": written past the end";
}

// warpgroup_product<T, N, B_TRANSPOSED> (tests/kernels/warpgroup.cpp): two blocks of 128 rows,
// K = 64, against the fp64 product of the same 16-bit inputs.
template <typename T, uint32_t N, bool B_TRANSPOSED>
void check_warpgroup_product() {
  const uint32_t m = 256, k = 64;
  std::vector<T> a = random16<T>(size_t(m) * k, -2, 2);
  std::vector<T> b = random16<T>(size_t(k) * N, -2, 2);   // K x N, or N x K when transposed
  float alpha = random_floats(1, 0.5f, 1.5f)[0];
  auto ba = upload(a), bb = upload(b);
  auto out = poisoned<float>(size_t(m) * N + 1);
  auto out16 = poisoned<T>(size_t(m) * N + 1);
  std::string name = std::string("warpgroup_product<") + (kIsBf16<T> ? "bf16" : "half") + ", " + std::to_string(N) +
                     ", " + (B_TRANSPOSED ? "true" : "false") + ">";
  env().mod.kernel(name).launch(quiver::Grid{m / 128}, ba, bb, out, out16, alpha);
  env().dev.synchronize();
  // The kernel's accumulator starts at 0.25.
  expect_product<T>(name, a, b, B_TRANSPOSED, [](size_t, size_t) { return 0.25; }, alpha, m, N, k, download(out),
                    download(out16));
}

// warpgroup_softmax<bf16> (tests/kernels/warpgroup.cpp): causal softmax(A B^T * scale) V (keys up to 47) for
// two blocks of 64 rows, against fp64 with P rounded to bf16 as the kernel does.
TEST(Kernels, WarpgroupSoftmaxBf16) {
  const uint32_t blocks = 2, n = 64;
  std::vector<quiver::bf16> a = random16<quiver::bf16>(size_t(blocks) * n * n, -1, 1);
  std::vector<quiver::bf16> bt = random16<quiver::bf16>(size_t(n) * n, -1, 1);
  std::vector<quiver::bf16> v = random16<quiver::bf16>(size_t(n) * n, -1, 1);
  float scale = random_floats(1, 0.1f, 0.3f)[0];
  auto ba = upload(a), bb = upload(bt), bv = upload(v);
  auto out = poisoned<float>(size_t(blocks) * n * n + 1);
  env().mod.kernel("warpgroup_softmax<bf16>").launch(quiver::Grid{blocks}, ba, bb, bv, out, scale);
  env().dev.synchronize();
  auto got = download(out);
  for (uint32_t r = 0; r < blocks * n; ++r) {
    uint32_t i = std::min(r % n, 47u);   // keys 0 .. min(row within the block, 47) are visible
    std::vector<double> s(i + 1);
    double m = -INFINITY;
    for (uint32_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (uint32_t k = 0; k < n; ++k) dot += double(bf16_value(a[size_t(r) * n + k].bits)) * bf16_value(bt[size_t(j) * n + k].bits);
      s[j] = float(dot) * scale;
      m = std::max(m, s[j]);
    }
    double l = 0;
    std::vector<double> p(i + 1);
    for (uint32_t j = 0; j <= i; ++j) l += p[j] = std::exp2(s[j] - m);
    for (uint32_t c = 0; c < n; ++c) {
      double o = 0, mag = 0, flips = 0;
      for (uint32_t j = 0; j <= i; ++j) {
        double vj = bf16_value(v[size_t(j) * n + c].bits);
        o += bf16_value(bf16_round(float(p[j]))) * vj;
        mag += p[j] * std::fabs(vj);
        // The kernel's p (S in float, exp2) is within ~1e-5 of this one: where a bf16 rounding
        // boundary lies that close, its P may round to the neighbour (a run failed on exactly that).
        double lo = bf16_value(bf16_round(float(p[j] * (1 - 1e-4)))), hi = bf16_value(bf16_round(float(p[j] * (1 + 1e-4))));
        flips += (hi - lo) * std::fabs(vj);
      }
      // P's rounding is the reference's own; left: S in float (k = 64 products), exp2, sums.
      double bound = 1e-3 * mag / l + flips / l + 1e-6;
      float g = got[size_t(r) * n + c];
      ASSERT_LE(std::fabs(g - o / l), bound) << "warpgroup_softmax at (" << r << ", " << c << "): " << g << " want "
                                            << o / l;
    }
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(got[size_t(blocks) * n * n]), 0xA5A5A5A5u) << "written past the end";
}

// tests/kernels/block_tiles.cpp: block tiles over a 64 x 128 x 64 product against fp64 (the
// accumulator starts at 0.25), B as stored and transposed, A from a buffer or staged in shared memory.
template <typename T, uint32_t BM, uint32_t BN, uint32_t KS, bool BT>
void check_block_product(const std::string& kernel) {
  const uint32_t m = 64, n = 128, k = 64;
  std::vector<T> a = random16<T>(size_t(m) * k, -2, 2);
  std::vector<T> b = random16<T>(size_t(k) * n, -2, 2);   // K x N, or N x K when transposed
  float alpha = random_floats(1, 0.5f, 1.5f)[0];
  auto ba = upload(a), bb = upload(b);
  auto out = poisoned<float>(size_t(m) * n + 1);
  auto out16 = poisoned<T>(size_t(m) * n + 1);
  env().mod.kernel(kernel).launch(quiver::Grid{n / BN, m / BM}, ba, bb, out, out16, n, k, alpha);
  env().dev.synchronize();
  expect_product<T>(kernel, a, b, BT, [](size_t, size_t) { return 0.25; }, alpha, m, n, k, download(out), download(out16));
}

TEST(Kernels, BlockProductHalf) { check_block_product<quiver::half, 32, 64, 16, false>("block_product<half, 32, 64, 16, false>"); }
TEST(Kernels, BlockProductHalfTransposed) {
  check_block_product<quiver::half, 64, 32, 32, true>("block_product<half, 64, 32, 32, true>");
}
TEST(Kernels, BlockProductBf16Transposed) {
  check_block_product<quiver::bf16, 32, 32, 16, true>("block_product<bf16, 32, 32, 16, true>");
}
// block_product_i8 (tests/kernels/block_tiles.cpp) over 64 x 128 x 256 int8 values spanning the
// whole range, against an int64 host product wrapped to int32, bit for bit (products exact, int32
// sums wrapping: any order gives the same bits).
TEST(Kernels, BlockProductInt8) {
  const uint32_t m = 64, n = 128, k = 256;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> a(size_t(m) * k), bt(size_t(n) * k);
  for (auto& v : a) v = static_cast<int8_t>(d(rng));
  for (auto& v : bt) v = static_cast<int8_t>(d(rng));
  auto ba = upload(a), bb = upload(bt);
  auto out = poisoned<int32_t>(size_t(m) * n + 1);
  env().mod.kernel("block_product_i8<32, 64>").launch(quiver::Grid{n / 64, m / 32}, ba, bb, out, n, k);
  env().dev.synchronize();
  auto got = download(out);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      int64_t sum = 7;
      for (uint32_t kk = 0; kk < k; ++kk) sum += int64_t(a[size_t(i) * k + kk]) * bt[size_t(j) * k + kk];
      ASSERT_EQ(got[size_t(i) * n + j], static_cast<int32_t>(static_cast<uint32_t>(sum))) << "at (" << i << ", " << j << ")";
    }
  EXPECT_EQ(static_cast<uint32_t>(got[size_t(m) * n]), 0xA5A5A5A5u) << "written past the end";
}

TEST(Kernels, BlockProductFromShared) { check_block_product<quiver::half, 32, 32, 16, false>("block_product_shared"); }

// block_product_loaded: C0 from the buffer by load_block, alpha applied in shared memory between a
// store_block and a load_block.
TEST(Kernels, BlockAccumulatorLoadedAndScaledThroughShared) {
  const uint32_t m = 64, n = 96, k = 48;
  std::vector<quiver::half> a = random16<quiver::half>(size_t(m) * k, -2, 2);
  std::vector<quiver::half> b = random16<quiver::half>(size_t(k) * n, -2, 2);
  std::vector<float> c0 = random_floats(size_t(m) * n, -4, 4);
  float alpha = random_floats(1, 0.5f, 1.5f)[0];
  auto ba = upload(a), bb = upload(b);
  auto bc = upload(c0);
  auto out = poisoned<float>(size_t(m) * n + 1);
  auto out16 = poisoned<quiver::half>(size_t(m) * n + 1);
  env().mod.kernel("block_product_loaded").launch(quiver::Grid{n / 32, m / 32}, ba, bb, bc, out, out16, n, k, alpha);
  env().dev.synchronize();
  expect_product<quiver::half>("block_product_loaded", a, b, false,
                               [&](size_t i, size_t j) { return double(c0[i * n + j]); }, alpha, m, n, k, download(out),
                               download(out16));
}

// block_product_i8_loaded: int32 C0 (spanning the range, so sums wrap) by load_block, plus an
// int8 product, bit for bit against int64 wrapped to int32.
TEST(Kernels, BlockProductInt8OntoLoadedAccumulator) {
  const uint32_t m = 64, n = 128, k = 128;
  std::vector<int8_t> a = random_ints<int8_t>(size_t(m) * k, -128, 127);
  std::vector<int8_t> bt = random_ints<int8_t>(size_t(n) * k, -128, 127);
  std::vector<int32_t> c0 = random_ints<int32_t>(size_t(m) * n, INT32_MIN, INT32_MAX);
  auto ba = upload(a), bb = upload(bt);
  auto bc = upload(c0);
  auto out = poisoned<int32_t>(size_t(m) * n + 1);
  env().mod.kernel("block_product_i8_loaded").launch(quiver::Grid{n / 64, m / 32}, ba, bb, bc, out, n, k);
  env().dev.synchronize();
  auto got = download(out);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      int64_t sum = c0[size_t(i) * n + j];
      for (uint32_t kk = 0; kk < k; ++kk) sum += int64_t(a[size_t(i) * k + kk]) * bt[size_t(j) * k + kk];
      ASSERT_EQ(got[size_t(i) * n + j], static_cast<int32_t>(static_cast<uint32_t>(sum))) << "at (" << i << ", " << j << ")";
    }
  EXPECT_EQ(static_cast<uint32_t>(got[size_t(m) * n]), 0xA5A5A5A5u) << "written past the end";
}

TEST(Kernels, WarpgroupProductBf16N128) { check_warpgroup_product<quiver::bf16, 128, false>(); }
TEST(Kernels, WarpgroupProductBf16N128Transposed) { check_warpgroup_product<quiver::bf16, 128, true>(); }
TEST(Kernels, WarpgroupProductHalfN64) { check_warpgroup_product<quiver::half, 64, false>(); }
TEST(Kernels, WarpgroupProductHalfN32Transposed) { check_warpgroup_product<quiver::half, 32, true>(); }

TEST(Kernels, MatrixSoftmaxBf16) { check_matrix_softmax<quiver::bf16>(); }
TEST(Kernels, MatrixSoftmaxHalf) { check_matrix_softmax<quiver::half>(); }

// matrix_tiles_i8 (tests/kernels/matrix_tiles.cpp): int8 tiles against an int64 host product,
// wrapped to int32 (C0 spans the int32 range, so the sums wrap), and its float conversion times
// alpha, bit for bit (one correctly rounded conversion and one float product per element).
void check_matrix_tiles_i8(uint32_t b_mode) {
  const uint32_t m = 48, n = 80, k = 96;   // 3 bands, 5 tiles a band (split unevenly), 3 k-steps
  std::vector<int8_t> a = random_ints<int8_t>(size_t(m) * k, -128, 127);
  std::vector<int8_t> b = random_ints<int8_t>(size_t(k) * n, -128, 127);   // K x N, or N x K (odd b_mode)
  std::vector<int32_t> c0 = random_ints<int32_t>(size_t(m) * n, INT32_MIN, INT32_MAX);
  int32_t bias = random_ints<int32_t>(1, -1000000, 1000000)[0];
  float alpha = random_floats(1, 0.5f, 1.5f)[0];
  auto ba = upload(a), bb = upload(b);
  auto bc = upload(c0);
  auto out = poisoned<int32_t>(size_t(m) * n + 1);
  auto outf = poisoned<float>(size_t(m) * n + 1);
  env().mod.kernel("matrix_tiles_i8").launch(quiver::Grid{m / 16}, ba, bb, bc, out, outf, n, k, b_mode, bias, alpha);
  env().dev.synchronize();
  auto got = download(out);
  auto gotf = download(outf);
  bool transposed = b_mode % 2 == 1;
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      int64_t sum = int64_t(c0[size_t(i) * n + j]) + bias;
      for (uint32_t kk = 0; kk < k; ++kk)
        sum += int64_t(a[size_t(i) * k + kk]) * (transposed ? b[size_t(j) * k + kk] : b[size_t(kk) * n + j]);
      int32_t want = static_cast<int32_t>(static_cast<uint32_t>(sum));   // int32 wraps
      ASSERT_EQ(got[size_t(i) * n + j], want) << "matrix_tiles_i8 b_mode " << b_mode << " at (" << i << ", " << j << ")";
      float wantf = static_cast<float>(want) * alpha;
      ASSERT_EQ(std::bit_cast<uint32_t>(gotf[size_t(i) * n + j]), std::bit_cast<uint32_t>(wantf))
          << "matrix_tiles_i8 b_mode " << b_mode << " float at (" << i << ", " << j << "): " << gotf[size_t(i) * n + j]
          << " want " << wantf;
    }
  EXPECT_EQ(static_cast<uint32_t>(got[size_t(m) * n]), 0xA5A5A5A5u) << "written past the end";
  EXPECT_EQ(std::bit_cast<uint32_t>(gotf[size_t(m) * n]), 0xA5A5A5A5u) << "written past the end";
}

TEST(Kernels, MatrixTilesInt8) { check_matrix_tiles_i8(0); }
TEST(Kernels, MatrixTilesInt8Transposed) { check_matrix_tiles_i8(1); }
TEST(Kernels, MatrixTilesInt8Shared) { check_matrix_tiles_i8(2); }
TEST(Kernels, MatrixTilesInt8SharedTransposed) { check_matrix_tiles_i8(3); }

TEST(Kernels, MatrixTilesBf16) { check_matrix_tiles<quiver::bf16>(false); }
TEST(Kernels, MatrixTilesBf16Transposed) { check_matrix_tiles<quiver::bf16>(true); }
TEST(Kernels, MatrixTilesHalf) { check_matrix_tiles<quiver::half>(false); }
TEST(Kernels, MatrixTilesHalfTransposed) { check_matrix_tiles<quiver::half>(true); }

}  // namespace
}  // namespace kernels_test
