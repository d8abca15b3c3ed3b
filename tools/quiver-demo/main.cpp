// quiver-demo: opens the best backend on this machine, loads the fat binary embedded by
// quiver_add_fatbin (kernels/saxpy.cpp, kernels/block_sum.cpp), runs both kernels on random
// data and compares every result with a host reference.
//   quiver-demo [--backend cuda|vulkan|cpu] [--n ELEMENTS] [--seed N]
// Exit status: 0 when every result matches, 1 on a mismatch, 2 on bad usage or a runtime error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <quiver/runtime.h>

#include "quiver_demo_kernels.h"

namespace {

struct Options {
  std::string backend;   // empty: best available (or QUIVER_BACKEND)
  uint32_t n = 1u << 20;
  uint32_t seed = std::random_device{}();
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "quiver-demo: " << problem << "\n"
            << "usage: quiver-demo [--backend cuda|vulkan|cpu] [--n ELEMENTS] [--seed N]\n";
  std::exit(2);
}

uint32_t parse_u32(const std::string& flag, const char* text) {
  char* end = nullptr;
  unsigned long v = std::strtoul(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v == 0 || v > 0xffffffffUL)
    usage(flag + " needs a positive 32-bit integer, got '" + text + "'");
  return static_cast<uint32_t>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: quiver-demo [--backend cuda|vulkan|cpu] [--n ELEMENTS] [--seed N]\n";
      std::exit(0);
    }
    if (i + 1 >= argc) usage("unknown or incomplete argument '" + a + "'");
    if (a == "--backend") o.backend = argv[++i];
    else if (a == "--n") o.n = parse_u32(a, argv[++i]);
    else if (a == "--seed") o.seed = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else usage("unknown argument '" + a + "'");
  }
  return o;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Prints one result line; returns whether it passed.
bool report(const std::string& what, size_t bad, size_t total, double max_err, double ms) {
  std::cout << "  " << what << ": " << (bad ? "MISMATCH" : "ok") << " (" << total - bad << "/" << total
            << " match, max |error| " << max_err << ", " << ms << " ms incl. synchronize)\n";
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  std::mt19937 rng(opt.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const uint32_t n = opt.n;
  try {
    std::cout << "available backends:";
    for (const std::string& b : quiver::Device::available_backends()) std::cout << " " << b;
    std::cout << "\n";
    quiver::Device dev = quiver::Device::open(opt.backend);
    quiver::Module mod = demo_kernels::load(dev);
    std::cout << "backend: " << dev.backend_name() << "\n"
              << "device:  " << dev.device_name() << "\n"
              << "image:   " << mod.backend_image() << "\n"
              << "kernels:";
    for (const std::string& k : mod.kernel_names()) std::cout << " " << k;
    std::cout << "\nrunning on " << n << " random floats (seed " << opt.seed << ")\n";

    std::vector<float> x(n), y(n);
    for (float& v : x) v = dist(rng);
    for (float& v : y) v = dist(rng);
    const float a = dist(rng) * 4.0f;
    quiver::Buffer<float> dx = dev.alloc<float>(n), dy = dev.alloc<float>(n);
    dx.upload(x);
    dy.upload(y);

    // saxpy against a*x+y on the host (an fma on either side may differ in the last bit).
    auto t0 = std::chrono::steady_clock::now();
    demo_kernels::saxpy(dev, quiver::Grid{(n + 255) / 256}, dx, dy, a, n);
    dev.synchronize();
    double saxpy_ms = ms_since(t0);
    std::vector<float> got(n);
    dy.download(got);
    size_t bad = 0;
    double max_err = 0;
    for (uint32_t i = 0; i < n; ++i) {
      double want = static_cast<double>(a) * x[i] + y[i];
      double err = std::fabs(got[i] - want);
      max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
      if (!(err <= 1e-6 * (1.0 + std::fabs(want)))) ++bad;
    }
    bool ok = report("saxpy", bad, n, max_err, saxpy_ms);

    // block_sum: per-block sums of x into a poisoned partial buffer, against double sums on the
    // host; float rounding in a 256-element tree stays far below 1e-5 of the sum of |x|.
    const uint32_t blocks = (n + 255) / 256;
    quiver::Buffer<float> partial = dev.alloc<float>(blocks);
    partial.upload(std::vector<float>(blocks, nan));
    t0 = std::chrono::steady_clock::now();
    demo_kernels::block_sum(dev, quiver::Grid{blocks}, dx, partial, n);
    dev.synchronize();
    double sum_ms = ms_since(t0);
    std::vector<float> sums(blocks);
    partial.download(sums);
    bad = 0;
    max_err = 0;
    double total = 0, total_want = 0;
    for (uint32_t b = 0; b < blocks; ++b) {
      double want = 0, magnitude = 0;
      for (uint32_t i = b * 256; i < std::min(n, b * 256 + 256); ++i) {
        want += x[i];
        magnitude += std::fabs(x[i]);
      }
      double err = std::fabs(sums[b] - want);
      max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
      if (!(err <= 1e-5 * magnitude + 1e-6)) ++bad;
      total += sums[b];
      total_want += want;
    }
    ok = report("block_sum", bad, blocks, max_err, sum_ms) && ok;
    std::cout << "  sum of all " << n << " elements: " << total << " (host: " << total_want << ")\n";
    std::cout << (ok ? "all results match the host reference" : "RESULTS DIFFER from the host reference") << "\n";
    return ok ? 0 : 1;
  } catch (const quiver::Error& e) {
    std::cerr << "quiver-demo: " << e.what() << "\n";
    return 2;
  }
}
