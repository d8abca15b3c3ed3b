// tests/kernels/launch_chain.cpp: a chain of launches, each reading what the one before it wrote,
// queued one by one and replayed as a recorded Graph. Where launches overlap (CUDA sm_90+,
// docs/abi.md "Overlapped launches") a kernel that read before its wait would see stale values.
// Every operation is exact in float (x * 0.5 + t, a + b in the host's order), so the device's
// values must equal the host's replay bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <quiver/runtime.h>
#include "kernels_common.h"
#include "test_kernels.h"

namespace {

using namespace kernels_test;

constexpr uint32_t kThreads = 256;

struct Chain {
  uint32_t n;
  std::vector<float> table, a, acc;
  // One round on the host: a -> b -> a, then acc += a.
  void round() {
    for (uint32_t i = 0; i < n; ++i) {
      float b = a[i] * 0.5f + table[i];
      a[i] = b * 0.5f + table[i];
      acc[i] = acc[i] + a[i];
    }
  }
};

void expect_equal_bits(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << "[" << i << "] = " << got[i] << ", the host's replay has " << want[i];
}

TEST(LaunchChain, EachLaunchSeesThePreviousOnesWrites) {
  const uint32_t n = (1u << 20) + 17, rounds = 24;
  Chain host{n, random_floats(n, -4, 4), random_floats(n, -100, 100), random_floats(n, -1, 1)};
  auto table = upload(host.table), a = upload(host.a), acc = upload(host.acc);
  auto b = poisoned<float>(n);
  // 64 blocks past the last element: they return before reaching their wait.
  const quiver::Grid step_grid{(n + kThreads - 1) / kThreads + 64}, grid{(n + kThreads - 1) / kThreads};
  auto round = [&] {
    test_kernels::chain_step(env().dev, step_grid, table, a, b, n);
    test_kernels::chain_step(env().dev, step_grid, table, b, a, n);
    test_kernels::chain_accumulate(env().dev, grid, acc, a, n);
  };
  for (uint32_t r = 0; r < rounds; ++r) {
    round();
    host.round();
  }
  expect_equal_bits(download(a), host.a, "a");
  expect_equal_bits(download(acc), host.acc, "acc");

  quiver::Graph graph = env().dev.record([&] {
    for (uint32_t r = 0; r < 4; ++r) round();
  });
  for (uint32_t replay = 0; replay < 6; ++replay) {
    graph.replay();
    for (uint32_t r = 0; r < 4; ++r) host.round();
  }
  expect_equal_bits(download(a), host.a, "a after the graph's replays");
  expect_equal_bits(download(acc), host.acc, "acc after the graph's replays");
}

}  // namespace
