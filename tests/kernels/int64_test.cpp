// tests/kernels/int64_ops.cpp against its host reference (int64_ref.h) on the backend under test.
#include <gtest/gtest.h>

#include <bit>

#include "int64_ref.h"
#include "kernels_common.h"

namespace kernels_test {
namespace {

TEST(Kernels, Int64Arithmetic) {
  const uint32_t n = 3000;   // not a multiple of the block: the tail guard is exercised
  auto a = int64_ref::inputs(n, rng());
  auto b = int64_ref::inputs(n, rng());
  int64_ref::fix_divisors(a, b);
  auto f = int64_ref::floats(n, rng());
  int64_t k = int64_ref::inputs(1, rng())[0];
  auto ba = upload(a);
  auto bb = upload(b);
  auto bf = upload(f);
  // One element past each output stays poisoned: nothing writes beyond n.
  auto out_b = poisoned<int64_t>(16 * size_t(n) + 1);
  auto fout_b = poisoned<float>(2 * size_t(n) + 1);
  test_kernels::int64_ops(env().dev, quiver::Grid{(n + 63) / 64}, ba, bb, bf, out_b, fout_b, k, n);
  auto out = download(out_b);
  auto fout = download(fout_b);
  for (uint32_t i = 0; i < n; ++i) {
    int64_ref::Result r = int64_ref::compute(a[i], b[i], f[i], k, i);
    for (int j = 0; j < 16; ++j)
      ASSERT_EQ(out[16 * size_t(i) + j], r.out[j]) << "i=" << i << " result " << j << " x=" << a[i] << " y=" << b[i]
                                                    << " f=" << f[i] << " k=" << k;
    for (int j = 0; j < 2; ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(fout[2 * size_t(i) + j]), std::bit_cast<uint32_t>(r.f[j]))
          << "i=" << i << " float conversion " << j << " of " << a[i] << ": " << fout[2 * size_t(i) + j] << " vs " << r.f[j];
  }
  EXPECT_EQ(uint64_t(out[16 * size_t(n)]), 0xA5A5A5A5A5A5A5A5ull) << "written past the end";
  EXPECT_EQ(std::bit_cast<uint32_t>(fout[2 * size_t(n)]), 0xA5A5A5A5u) << "written past the end";
}

}  // namespace
}  // namespace kernels_test
