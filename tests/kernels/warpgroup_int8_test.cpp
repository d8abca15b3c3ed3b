// warpgroup_product_i8<N, ZERO_START> (tests/kernels/warpgroup_int8.cpp) against a host product of
// the same int8 inputs: the int32 result exactly (wrapping modulo 2^32 from a start near 2^31),
// the scaled float result bit for bit ((float(c) * row scale) * column scale, rounded per step)
// inside the edge, and the poison untouched outside it and past the end.
#include <gtest/gtest.h>

#include <bit>
#include <string>

#include "kernels_common.h"

namespace kernels_test {
namespace {

template <uint32_t N, bool ZERO_START>
void check_warpgroup_product_i8() {
  const uint32_t blocks = 2, m = 128 * blocks, k = 128;
  std::vector<int8_t> a = random_ints<int8_t>(size_t(m) * k, -128, 127);
  std::vector<int8_t> bt = random_ints<int8_t>(size_t(N) * k, -128, 127);   // N x K
  std::vector<float> rs = random_floats(m, -2.0f, 2.0f), cs = random_floats(N, 1e-3f, 1.0f);
  // Near 2^31 - 1, so that sums of both signs cross it and wrap.
  int32_t start = ZERO_START ? 0 : random_ints<int32_t>(1, 2147483647 - 300000, 2147483647)[0];
  // An edge inside the second block's first warpgroup and inside the columns.
  uint32_t rows = 128 + 64 - 11, cols = N - 13;
  auto ba = upload(a), bb = upload(bt);
  auto brs = upload(rs), bcs = upload(cs);
  auto out = poisoned<int32_t>(size_t(m) * N + 1);
  auto scaled = poisoned<float>(size_t(m) * N + 1);
  std::string name = "warpgroup_product_i8<" + std::to_string(N) + ", " + (ZERO_START ? "true" : "false") + ">";
  env().mod.kernel(name).launch(quiver::Grid{blocks}, ba, bb, brs, bcs, out, scaled, start, rows, cols);
  env().dev.synchronize();
  std::vector<int32_t> got = download(out);
  std::vector<float> got_f = download(scaled);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      int64_t sum = 0;
      for (uint32_t p = 0; p < k; ++p) sum += int64_t(a[size_t(i) * k + p]) * int64_t(bt[size_t(j) * k + p]);
      int32_t want = static_cast<int32_t>(static_cast<uint32_t>(start) + static_cast<uint32_t>(sum));
      size_t at = size_t(i) * N + j;
      ASSERT_EQ(got[at], want) << name << " at (" << i << ", " << j << ")";
      volatile float step = static_cast<float>(want) * rs[i];   // volatile: one float rounding per step
      float want_f = step * cs[j];
      if (i < rows && j < cols)
        ASSERT_EQ(std::bit_cast<uint32_t>(got_f[at]), std::bit_cast<uint32_t>(want_f))
            << name << " scaled at (" << i << ", " << j << "): " << got_f[at] << " want " << want_f;
      else
        ASSERT_EQ(std::bit_cast<uint32_t>(got_f[at]), 0xA5A5A5A5u) << name << ": written outside the edge at (" << i
                                                                   << ", " << j << ")";
    }
  EXPECT_EQ(static_cast<uint32_t>(got[size_t(m) * N]), 0xA5A5A5A5u) << name << ": written past the end";
  EXPECT_EQ(std::bit_cast<uint32_t>(got_f[size_t(m) * N]), 0xA5A5A5A5u) << name << ": written past the end";
}

TEST(Kernels, WarpgroupProductInt8N64Wrapping) { check_warpgroup_product_i8<64, false>(); }
TEST(Kernels, WarpgroupProductInt8N112) { check_warpgroup_product_i8<112, true>(); }

}  // namespace
}  // namespace kernels_test
