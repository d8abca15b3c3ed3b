// Two fat binaries loaded on one Device at the same time: the kernel suite's module (alive for
// the whole test binary) and the op library (loaded by the first op call), each launched after
// the other is loaded, against host references. On the CPU backend the second module once
// received the first one's dlopen handle (both were opened through the same /proc/self/fd path).
#include <gtest/gtest.h>

#include <cmath>

#include <quiver/ops.h>
#include "kernels_common.h"

namespace kernels_test {
namespace {

TEST(Kernels, TwoModulesLoadedAtOnceEachRunTheirOwnKernels) {
  const uint32_t n = 3001;
  auto x = random_floats(n, -4, 4), g = random_floats(n, -2, 2);
  auto bx = upload(x), bg = upload(g);
  auto out = poisoned<float>(n);
  quiver::ops::silu_gate(env().dev, bx, bg, out, n);   // the op library, while env().mod is loaded
  auto got = download(out);
  for (uint32_t i = 0; i < n; ++i) {
    double ref = double(x[i]) / (1.0 + std::exp(-double(x[i]))) * g[i];
    ASSERT_NEAR(got[i], ref, 1e-5 * (1.0 + std::fabs(ref))) << "silu_gate element " << i;
  }
  auto y = random_floats(n, -1, 1);
  auto by = upload(y);
  test_kernels::saxpy(env().dev, quiver::Grid{(n + 255) / 256}, bx, by, 2.0f, n);   // the suite's, after
  auto got_y = download(by);
  for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(got_y[i], 2.0f * x[i] + y[i], 1e-5f) << "saxpy element " << i;
}

}  // namespace
}  // namespace kernels_test
