// quiver::Graph (Device::record / Graph::replay) on the backend QUIVER_BACKEND names, with the
// op library's kernels: a replay runs the recorded launches in order with the buffers' contents
// at replay time, recording runs nothing, a Graph keeps its buffers alive, and what cannot be
// recorded throws a named error and leaves the Device usable.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "error_of.h"
#include "gate.h"

namespace {

namespace ops = quiver::ops;
using quiver::Buffer;
using quiver::ErrorCode;

quiver::Device& dev() { return gate::device(); }

// Small integers: every sum below is exact in float, so replays compare bit for bit.
std::vector<float> small_integers(size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(gate::rng()));
  return v;
}

using quiver::test::error_of;

// acc += inc; out = acc * scale; best = argmax(out): three launches whose effect accumulates,
// so each replay must run every launch once, in order, reading what the last one left.
TEST(Graph, ReplaysLaunchesInOrderWithTheBuffersAsTheyAreThen) {
  const size_t n = 3000;   // not a multiple of any block size
  std::vector<float> acc0 = small_integers(n, -50, 50), inc = small_integers(n, -3, 3);
  std::vector<float> scale = small_integers(n, 1, 4);
  Buffer<float> acc = gate::upload(acc0), b_inc = gate::upload(inc), b_scale = gate::upload(scale);
  Buffer<float> out = gate::poisoned<float>(n);
  Buffer<int32_t> best = gate::poisoned<int32_t>(1);

  quiver::Graph g = dev().record([&] {
    ops::add(dev(), acc, b_inc, acc, n);
    ops::mul(dev(), acc, b_scale, out, n);
    ops::argmax(dev(), out, best, 1, n);
  });
  EXPECT_EQ(g.launch_count(), 3u);
  // Recording ran nothing.
  dev().synchronize();
  EXPECT_EQ(gate::download(acc), acc0);
  for (float v : gate::download(out)) ASSERT_TRUE(std::isnan(v));

  std::vector<double> ref(acc0.begin(), acc0.end());
  for (int replay = 1; replay <= 5; ++replay) {
    if (replay == 4) {   // an upload between replays is what the next replay reads
      inc = small_integers(n, -3, 3);
      b_inc.upload(inc);
    }
    g.replay();
    for (size_t i = 0; i < n; ++i) ref[i] += inc[i];
  }
  // Replays queued back to back, then one wait: nothing runs out of order.
  std::vector<float> got_acc = gate::download(acc), got_out = gate::download(out);
  size_t want = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(double(got_acc[i]), ref[i]) << "acc[" << i << "]";
    ASSERT_EQ(double(got_out[i]), ref[i] * scale[i]) << "out[" << i << "]";
    if (ref[i] * scale[i] > ref[want] * scale[want]) want = i;
  }
  EXPECT_EQ(gate::download(best)[0], int32_t(want));
}

// The Graph holds what its launches use: the handles it was recorded with may go first.
TEST(Graph, KeepsItsBuffersAlive) {
  const size_t n = 1024;
  std::vector<float> a = small_integers(n, -9, 9), b = small_integers(n, -9, 9);
  Buffer<float> result = gate::poisoned<float>(n);
  quiver::Graph g;
  {
    Buffer<float> ba = gate::upload(a), bb = gate::upload(b), sum = gate::poisoned<float>(n);
    g = dev().record([&] {
      ops::add(dev(), ba, bb, sum, n);
      ops::mul(dev(), sum, bb, result, n);
    });
  }
  g.replay();
  g.replay();
  std::vector<float> got = gate::download(result);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], (a[i] + b[i]) * b[i]) << i;
}

TEST(Graph, WhatCannotBeRecordedIsRefusedByName) {
  const size_t n = 256;
  std::vector<float> host(n, 1.0f);
  Buffer<float> x = gate::upload(host), y = gate::poisoned<float>(n);

  quiver::Error up = error_of([&] { dev().record([&] { x.upload(host); }); });
  EXPECT_EQ(up.code(), ErrorCode::InvalidArgument);
  EXPECT_CONTAINS(up.what(), "a buffer upload on the Device being recorded (Device::record): only kernel launches");
  EXPECT_CONTAINS(error_of([&] { dev().record([&] { x.download(host); }); }).what(), "a buffer download");
  EXPECT_CONTAINS(error_of([&] { dev().record([&] { dev().synchronize(); }); }).what(), "Device::synchronize");
  EXPECT_CONTAINS(error_of([&] { dev().record([&] { dev().elapsed_ms([] {}); }); }).what(), "Device::elapsed_ms");
  EXPECT_CONTAINS(error_of([&] { dev().record([&] { dev().record([] {}); }); }).what(),
                  "Device::record: this thread is already recording on this Device (records do not nest)");
  EXPECT_CONTAINS(error_of([&] { quiver::Graph().replay(); }).what(), "quiver::Graph is empty");

  // A bad launch inside the recording throws as it would when run; the recording stops and the
  // Device runs launches again.
  quiver::Error bad = error_of([&] { dev().record([&] { ops::add(dev(), x, x, y, n + 1); }); });
  EXPECT_EQ(bad.code(), ErrorCode::InvalidArgument);
  ops::add(dev(), x, x, y, n);
  for (float v : gate::download(y)) ASSERT_EQ(v, 2.0f);
  EXPECT_EQ(dev().record([] {}).launch_count(), 0u);
  dev().record([] {}).replay();   // nothing to do
}

// Another thread's launches while one records run at once and are not recorded.
TEST(Graph, OtherThreadsLaunchesRunWhileOneRecords) {
  const size_t n = 512;
  std::vector<float> ones(n, 1.0f);
  Buffer<float> x = gate::upload(ones), recorded = gate::poisoned<float>(n), direct = gate::poisoned<float>(n);
  quiver::Graph g = dev().record([&] {
    ops::add(dev(), x, x, recorded, n);
    std::thread other([&] { ops::mul(dev(), x, x, direct, n); });
    other.join();
  });
  EXPECT_EQ(g.launch_count(), 1u);
  for (float v : gate::download(direct)) ASSERT_EQ(v, 1.0f);
  for (float v : gate::download(recorded)) ASSERT_TRUE(std::isnan(v));
  g.replay();
  for (float v : gate::download(recorded)) ASSERT_EQ(v, 2.0f);
}

}  // namespace
