// The consumer app of the installed-package test: runs the kernels of myops (built by the
// installed quiverc through quiver_add_fatbin) on the backend QUIVER_BACKEND selects and checks
// every result against a host reference on fresh random inputs, outputs poisoned beforehand.
//   consumer <path of myops.qfb>     (exit status 0 = every check passed)
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <quiver/runtime.h>

#include "myops.h"

// The generated wrapper has exactly the documented signature.
static_assert(std::is_same_v<decltype(&myops::saxpy),
                             void (*)(const quiver::Device&, quiver::Grid, const quiver::Buffer<float>&,
                                      quiver::Buffer<float>&, float, uint32_t)>);
static_assert(std::is_same_v<decltype(&myops::scaled_copy),
                             void (*)(const quiver::Device&, quiver::Grid, const quiver::Buffer<float>&,
                                      quiver::Buffer<float>&, float, bool, uint32_t)>);

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "FAIL: " << what << "\n";
  }
}

// Tolerance for a*x+y, which either compiler may contract to an fma.
bool close(float got, float want) { return std::fabs(got - want) <= 1e-5f * (1.0f + std::fabs(want)); }

template <typename T>
void check_all(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bool ok;
    if constexpr (std::is_floating_point_v<T>) ok = close(got[i], want[i]);
    else ok = got[i] == want[i];
    if (!ok && bad++ == 0) first = i;
  }
  if (bad) std::cerr << what << ": element " << first << " is " << +got[first] << ", expected " << +want[first] << "\n";
  check(bad == 0, what + " (" + std::to_string(bad) + " of " + std::to_string(want.size()) + " wrong)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer <myops.qfb>\n";
    return 2;
  }
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  auto random_floats = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  try {
    quiver::Device dev = quiver::Device::open();
    const char* forced = std::getenv("QUIVER_BACKEND");
    std::cout << "seed " << seed << ", backend " << dev.backend_name() << " (" << dev.device_name() << ")\n";
    if (forced) check(dev.backend_name() == forced, std::string("QUIVER_BACKEND=") + forced + " was not honoured");
    std::cout << "image " << myops::load(dev).backend_image() << "\n";

    // saxpy: y has one element past n, poisoned, which the kernel must not touch.
    const uint32_t n = 1000 + rng() % 9000;
    const float a = dist(rng);
    std::vector<float> x = random_floats(n), y = random_floats(n);
    quiver::Buffer<float> dx = dev.alloc<float>(n), dy = dev.alloc<float>(n + 1);
    dx.upload(x);
    std::vector<float> y_dev = y;
    y_dev.push_back(nan);
    dy.upload(y_dev);
    myops::saxpy(dev, quiver::Grid{(n + 255) / 256}, dx, dy, a, n);
    dev.synchronize();
    std::vector<float> got(n + 1), want(n);
    dy.download(got);
    check(std::isnan(got[n]), "saxpy wrote past n");
    got.pop_back();
    for (uint32_t i = 0; i < n; ++i) want[i] = a * x[i] + y[i];
    check_all(got, want, "myops::saxpy");

    // scaled_copy with both values of its bool parameter; output poisoned.
    for (bool negate : {false, true}) {
      quiver::Buffer<float> out = dev.alloc<float>(n);
      out.upload(std::vector<float>(n, nan));
      const float s = dist(rng);
      myops::scaled_copy(dev, quiver::Grid{(n + 127) / 128}, dx, out, s, negate, n);
      dev.synchronize();
      std::vector<float> r(n), w(n);
      out.download(r);
      for (uint32_t i = 0; i < n; ++i) w[i] = negate ? -(s * x[i]) : s * x[i];
      check_all(r, w, std::string("myops::scaled_copy negate=") + (negate ? "true" : "false"));
    }

    // Template instantiations, by canonical name.
    {
      quiver::Buffer<float> out = dev.alloc<float>(n);
      out.upload(std::vector<float>(n, nan));
      myops::load(dev).kernel("scale_by<float, 3>").launch(quiver::Grid{(n + 63) / 64}, dx, out, n);
      std::vector<int32_t> xi(n);
      for (int32_t& v : xi) v = static_cast<int32_t>(rng() % 2000001) - 1000000;
      quiver::Buffer<int32_t> dxi = dev.alloc<int32_t>(n), outi = dev.alloc<int32_t>(n);
      dxi.upload(xi);
      outi.upload(std::vector<int32_t>(n, static_cast<int32_t>(0xABABABABu)));
      myops::load(dev).kernel("scale_by<int32_t, 5>").launch(quiver::Grid{(n + 63) / 64}, dxi, outi, n);
      dev.synchronize();
      std::vector<float> r(n), w(n);
      out.download(r);
      for (uint32_t i = 0; i < n; ++i) w[i] = x[i] * 3.0f;
      check_all(r, w, "scale_by<float, 3>");
      std::vector<int32_t> ri(n), wi(n);
      outi.download(ri);
      for (uint32_t i = 0; i < n; ++i) wi[i] = xi[i] * 5;
      check_all(ri, wi, "scale_by<int32_t, 5>");
    }

    // The embedded bytes are the .qfb file quiver_add_fatbin wrote.
    std::ifstream f(argv[1], std::ios::binary);
    std::vector<char> file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::span<const std::byte> embedded = myops::fatbin();
    check(f.good() || f.eof(), std::string("cannot read ") + argv[1]);
    check(file.size() == embedded.size() &&
              std::equal(file.begin(), file.end(), embedded.begin(),
                         [](char c, std::byte b) { return static_cast<std::byte>(c) == b; }),
          "myops::fatbin() differs from " + std::string(argv[1]));

    // A name the fat binary does not have is an error naming it.
    try {
      myops::load(dev).kernel("saxpy_missing");
      check(false, "kernel(\"saxpy_missing\") did not throw");
    } catch (const quiver::Error& e) {
      check(std::string(e.what()).find("saxpy_missing") != std::string::npos,
            std::string("the error does not name the kernel: ") + e.what());
    }
  } catch (const std::exception& e) {
    std::cerr << "FAIL: " << e.what() << "\n";
    return 1;
  }
  std::cout << (failures ? "FAILED" : "all checks passed") << "\n";
  return failures ? 1 : 0;
}
