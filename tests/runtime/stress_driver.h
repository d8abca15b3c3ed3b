// Many host threads using one quiver::Device at once (docs/runtime.md, "Thread safety"): each
// thread loads modules, allocates, uploads, launches and downloads on the shared Device and
// checks its own results exactly. Used by stress_threads_test.cpp (CPU, Vulkan) and the CUDA
// tests. The arithmetic is on small integers held in floats, so every result is exact on every
// backend and a single element written by the wrong launch or thread shows.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <latch>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "quiver/runtime.h"

namespace quiver::test {

struct StressOptions {
  int threads = 8;
  int launches = 10'000;        // saxpy launches per thread
  bool block_sum = true;        // the fat binary has block_sum(in, partial, n) with block 256
  int check_every = 250;        // saxpy launches between downloads (bounds the values: exact)
  int block_sum_every = 97;
  int alloc_every = 500;        // a short-lived buffer: alloc, upload, download, free
  int reload_every = 2'500;     // a fresh module of the thread's own
};

// Launches per thread: QUIVER_STRESS_LAUNCHES when set, else `fallback`.
inline int stress_launches(int fallback) {
  if (const char* env = std::getenv("QUIVER_STRESS_LAUNCHES"); env && *env) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return fallback;
}

struct StressReport {
  long long launches = 0;   // every kernel launch, all threads
  double seconds = 0;
};

// Runs the stress on `dev`; every failure is an EXPECT naming the thread and what went wrong.
inline StressReport run_thread_stress(Device& dev, const std::vector<std::byte>& fatbin,
                                      const StressOptions& opt) {
  constexpr uint32_t n = 512;    // two blocks of 256
  constexpr uint32_t pad = 64;   // poisoned tail: must never be written
  const float poison = std::numeric_limits<float>::quiet_NaN();
  Module shared = dev.load(fatbin, "stress-shared.qfb");
  std::vector<std::string> failures(opt.threads);
  std::vector<long long> launched(opt.threads, 0);
  std::latch start(opt.threads);

  auto worker = [&](int t) {
    std::string& failure = failures[t];
    std::mt19937 rng(std::random_device{}() + static_cast<unsigned>(t));
    std::uniform_int_distribution<int> small(-8, 8), big(-1000, 1000);
    auto fail = [&](const std::string& what) { failure = "thread " + std::to_string(t) + ": " + what; };
    bool arrived = false;
    try {
      std::optional<Module> own(dev.load(fatbin, "stress-" + std::to_string(t) + ".qfb"));
      std::vector<float> x(n), y0(n + pad, poison), got(n + pad);
      for (float& v : x) v = static_cast<float>(small(rng));
      auto fresh_y = [&] {
        for (uint32_t i = 0; i < n; ++i) y0[i] = static_cast<float>(big(rng));
      };
      fresh_y();
      Buffer<float> bx = dev.alloc<float>(n), by = dev.alloc<float>(n + pad);
      Buffer<float> partial = dev.alloc<float>(2 + pad);
      bx.upload(x);
      by.upload(y0);
      double coeff = 0;   // y = y0 + coeff * x after the launches since the last check
      arrived = true;
      start.arrive_and_wait();
      for (int j = 0; j < opt.launches && failure.empty(); ++j) {
        if (opt.reload_every > 0 && j % opt.reload_every == opt.reload_every - 1)
          own.emplace(dev.load(fatbin, "stress-" + std::to_string(t) + "-" + std::to_string(j) + ".qfb"));
        const Module& m = (j / 1000) % 2 ? *own : shared;
        const float a = static_cast<float>((j * 7 + t * 3) % 5 - 2);
        m.kernel("saxpy").launch(Grid{n / 256}, bx, by, a, n);
        ++launched[t];
        coeff += a;
        if ((j + 1) % opt.check_every == 0 || j + 1 == opt.launches) {
          by.download(got);
          for (uint32_t i = 0; i < n + pad && failure.empty(); ++i) {
            const bool ok = i < n ? got[i] == static_cast<float>(y0[i] + coeff * x[i]) : std::isnan(got[i]);
            if (!ok)
              fail("after launch " + std::to_string(j) + ", y[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
                   (i < n ? ", expected " + std::to_string(y0[i] + coeff * x[i]) : std::string(" past n (poison)")));
          }
          fresh_y();
          by.upload(y0);
          coeff = 0;
        }
        if (opt.block_sum && j % opt.block_sum_every == 0) {
          std::vector<float> out(2 + pad, poison);
          partial.upload(out);
          m.kernel("block_sum").launch(Grid{2}, bx, partial, n);
          ++launched[t];
          partial.download(out);
          for (uint32_t b = 0; b < 2 + pad && failure.empty(); ++b) {
            double sum = 0;
            if (b < 2)
              for (uint32_t i = 0; i < 256; ++i) sum += x[b * 256 + i];
            if (b < 2 ? out[b] != static_cast<float>(sum) : !std::isnan(out[b]))
              fail("block_sum at launch " + std::to_string(j) + ": partial[" + std::to_string(b) + "] = " +
                   std::to_string(out[b]) + (b < 2 ? ", expected " + std::to_string(sum) : " (poison expected)"));
          }
        }
        if (opt.alloc_every > 0 && j % opt.alloc_every == 0) {
          const size_t size = 1000 + static_cast<size_t>(t) * 13 + static_cast<size_t>(j % 7);
          std::vector<int32_t> data(size), back(size, -1);
          for (int32_t& v : data) v = big(rng);
          Buffer<int32_t> temp = dev.alloc<int32_t>(size);
          temp.upload(data);
          temp.download(back);
          if (back != data) fail("a temporary buffer of " + std::to_string(size) + " came back different");
        }
      }
    } catch (const std::exception& e) {
      fail(std::string("exception: ") + e.what());
      if (!arrived) start.count_down();   // the others must not wait for this thread
    }
  };

  const auto begin = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < opt.threads; ++t) threads.emplace_back(worker, t);
  for (std::thread& th : threads) th.join();
  dev.synchronize();
  StressReport report;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (long long l : launched) report.launches += l;
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  return report;
}

}  // namespace quiver::test
