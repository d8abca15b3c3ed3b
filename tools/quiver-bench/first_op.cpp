#include "first_op.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <quiver/ops.h>
#include <quiver/runtime.h>

namespace quiver_bench {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// How long ago the kernel started this process (exec, dynamic loading and static constructors
// included), from /proc/self/stat's start time in clock ticks since boot against CLOCK_BOOTTIME:
// resolution one tick (10 ms at the usual USER_HZ of 100). Negative when /proc is unreadable.
double process_age_ms() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Field 2 (the command name) may hold spaces and parentheses: count fields after its last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  const long hz = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (start_ticks == 0 || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double now_ms = double(now.tv_sec) * 1e3 + double(now.tv_nsec) * 1e-6;
  return now_ms - double(start_ticks) * 1e3 / double(hz);
}

// CPU time of the whole process so far (every thread: the driver's compiler threads too), user +
// system: unlike the wall time, it barely depends on what else the machine is running.
double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (double(u.ru_utime.tv_sec) + double(u.ru_stime.tv_sec)) * 1e3 +
         (double(u.ru_utime.tv_usec) + double(u.ru_stime.tv_usec)) * 1e-3;
}

// out[r, c] = x[r, c] * w[c] / sqrt(mean_c x[r, c]^2 + eps), in double (ops.h's definition).
std::vector<double> rms_norm_reference(const std::vector<float>& x, const std::vector<float>& w, size_t rows,
                                       size_t cols, float eps) {
  std::vector<double> out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += double(x[r * cols + c]) * x[r * cols + c];
    const double scale = 1.0 / std::sqrt(sum / double(cols) + eps);
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = x[r * cols + c] * scale * w[c];
  }
  return out;
}

}  // namespace

int first_op(const std::string& backend, const std::string& json_path) {
  const double age_at_main_ms = process_age_ms();
  const auto t_main = std::chrono::steady_clock::now();
  constexpr size_t kRows = 8, kCols = 1024;
  constexpr float kEps = 1e-6f;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> x(kRows * kCols), w(kCols);
  for (float& v : x) v = d(rng);
  for (float& v : w) v = d(rng);
  std::vector<float> got(kRows * kCols, std::nanf(""));   // poisoned: a missing write shows

  nlohmann::json out;
  try {
    const double c0 = process_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    quiver::Device dev = quiver::Device::open(backend);
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = process_cpu_ms();
    quiver::Module lib = quiver::ops::library(dev);
    const auto t2 = std::chrono::steady_clock::now();
    const double c2 = process_cpu_ms();
    quiver::Buffer<float> bx = dev.alloc<float>(x.size()), bw = dev.alloc<float>(w.size());
    quiver::Buffer<float> bout = dev.alloc<float>(got.size());
    bx.upload(x);
    bw.upload(w);
    bout.upload(got);
    const auto t3 = std::chrono::steady_clock::now();
    const double c3 = process_cpu_ms();
    quiver::ops::rms_norm(dev, bx, bw, bout, kRows, kCols, kEps);
    bout.download(got);
    const auto t4 = std::chrono::steady_clock::now();
    const double c4 = process_cpu_ms();

    const std::vector<double> want = rms_norm_reference(x, w, kRows, kCols, kEps);
    double max_rel = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double err = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
      max_rel = std::isnan(got[i]) ? INFINITY : std::max(max_rel, err);
    }
    const char* cache_dir = std::getenv("QUIVER_CACHE_DIR");
    out = {{"mode", "first_op"},
           {"op", "rms_norm f32 " + std::to_string(kRows) + "x" + std::to_string(kCols)},
           {"backend", dev.backend_name()},
           {"device", dev.device_name()},
           {"image", std::string(lib.backend_image())},
           {"QUIVER_CACHE_DIR", cache_dir ? nlohmann::json(cache_dir) : nlohmann::json(nullptr)},
           {"process_start_to_main_ms", age_at_main_ms},
           {"main_to_device_open_ms", ms_between(t_main, t0)},
           {"device_open_ms", ms_between(t0, t1)},
           {"module_load_ms", ms_between(t1, t2)},
           {"buffers_ms", ms_between(t2, t3)},
           {"first_launch_sync_ms", ms_between(t3, t4)},
           {"main_to_result_ms", ms_between(t_main, t4)},
           {"process_start_to_result_ms", age_at_main_ms < 0 ? -1.0 : age_at_main_ms + ms_between(t_main, t4)},
           {"cpu_ms",
            {{"to_main", c0}, {"device_open", c1 - c0}, {"module_load", c2 - c1}, {"first_launch_sync", c4 - c3},
             {"to_result", c4}}},
           {"max_rel_error", max_rel}};
    std::printf("first op on %s (%s, image %s): device open %.1f ms, module load %.1f ms, buffers %.1f ms, "
                "first rms_norm + download %.1f ms; %.1f ms from main, %.0f ms from process start (+-10 ms); "
                "CPU time %.0f ms\n",
                dev.device_name().c_str(), dev.backend_name().c_str(), std::string(lib.backend_image()).c_str(),
                ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3), ms_between(t3, t4),
                ms_between(t_main, t4), out["process_start_to_result_ms"].get<double>(), c4);
    if (!(max_rel <= 1e-4)) {
      std::fprintf(stderr, "quiver-bench --first-op: rms_norm differs from the host reference (max relative error %g)\n",
                   max_rel);
      return 1;
    }
  } catch (const quiver::Error& e) {
    std::fprintf(stderr, "quiver-bench --first-op: %s\n", e.what());
    return 1;
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}

}  // namespace quiver_bench
