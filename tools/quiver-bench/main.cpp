// quiver-bench: every op of the op library at the anchor shapes, timed on the device (events on
// CUDA, timestamp queries on Vulkan, the host clock on the CPU backend, through
// Device::elapsed_ms_each), median of >= 100 runs after warm-up; the memory-bound cases rotate
// input sets so that they are never already in L2 (time_runs), the compute-bound ones are timed
// as triton.testing.do_bench timed their anchors (time_like_do_bench). Prints a table and writes
// JSON with GB/s (memory-bound ops, with the fraction of the copy bandwidth measured in the same
// run) or TFLOP/s. The memory-bound cases are also timed replayed from a recorded Graph against a
// copy of their size timed the same way (time_graph: "graph GB/s", "vs copy@size"), as a recorded
// decode step runs them. `--first-op` instead times a fresh process's first op (first_op.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <quiver/ops.h>
#include <quiver/runtime.h>

#include "bench_kernels.h"
#include "cases.h"
#include "first_op.h"

namespace {

using quiver_bench::Case;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
  double median_ms = 0, min_ms = 0;
  size_t runs = 0;
  std::vector<double> each_ms;   // in run order (--times)
  size_t warm_runs = 0;
  double warm_ms = 0, wall_start_s = 0;   // warm-up; wall-clock start of the timed runs (unix s)
};

Timing summarize(std::vector<double> ms, size_t warm_runs, double warm_ms, double wall_start_s) {
  Timing t{median(ms), *std::min_element(ms.begin(), ms.end()), ms.size(), {}, warm_runs, warm_ms, wall_start_s};
  t.each_ms = std::move(ms);
  return t;
}

// Runs are queued back to back and timed each by its own pair of device marks, waiting once
// (Device::elapsed_ms_each): waiting after every run idled the GPU between runs, and NVIDIA's
// Vulkan driver then ran most cases at a 345 MHz SM clock (nvidia-smi during quiver-bench,
// 2026-11-23), while CUDA kept 1980 MHz.
//
// Warm-up, queued back to back in doubling batches: at least `warmup` runs and `warm_ms` of
// device time, then on until a batch's time per run is within 2% of the batch's before (at most
// 5 s). The Vulkan driver lowers the SM clock while the host sets a case up and raises it only
// after some hundreds of milliseconds at full load: add_rms_norm f32 32768x4096 (2 GB of
// inputs made on the host) ran its 200 ms of warm-up and 78 timed runs at 1.31 ms (465-630 MHz),
// the rest at 0.74 (1980 MHz), so its median came out 0.55-0.69 of CUDA's in some processes and
// 0.97 in others (nvidia-smi every 20 ms beside `quiver-bench --times`). A plateau
// lasts ~300 ms, so the time floor, not only the 2% test, has to outlast it.
Timing time_runs(const quiver::Device& dev, const quiver_bench::Runner& run, size_t sets, size_t warmup,
                 double min_warm_ms, size_t iters) {
  double warm_ms = 0, last_per_run = 0;
  size_t warm_runs = 0;
  for (size_t batch = std::max<size_t>(warmup, 1);; batch = std::min<size_t>(batch * 2, 2000)) {
    double ms = dev.elapsed_ms([&] {
      for (size_t i = 0; i < batch; ++i) run((warm_runs + i) % sets);
    });
    double per_run = ms / batch;
    bool settled = last_per_run > 0 && std::abs(per_run - last_per_run) <= 0.02 * per_run;
    warm_ms += ms;
    warm_runs += batch;
    last_per_run = per_run;
    if (warm_ms >= 5000.0 || (warm_runs >= warmup && warm_ms >= min_warm_ms && settled)) break;
  }
  double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<double> ms = dev.elapsed_ms_each(iters, [&](size_t i) { run(i % sets); });
  return summarize(std::move(ms), warm_runs, warm_ms, wall);
}

// The compute-bound cases (matmul, attention) the way triton.testing.do_bench timed their anchors
// (cuBLAS, SDPA), so that both meet the same power state: five runs estimate the time, warm-up
// 25 ms of runs, then runs spanning at least 200 ms (and `iters`), each after `flush` writes
// 256 MB (untimed: those runs are timed apart and dropped). These cases hold the H100 at its
// 700 W limit, where the SM clock falls to 1100-1400 MHz within a second (nvidia-smi), so the
// memory-bound cases' longer warm-up measured them in a deeper throttle than the
// anchors (attention 495 -> 462 TFLOP/s), and back to back without the flushes in a deeper one
// still.
Timing time_like_do_bench(const quiver::Device& dev, const quiver_bench::Runner& run,
                          const std::function<void()>& flush, size_t iters) {
  run(0);
  double estimate = std::max(1e-3, dev.elapsed_ms([&] {
                                 for (int i = 0; i < 5; ++i) {
                                   flush();
                                   run(0);
                                 }
                               }) / 5);
  size_t warm_runs = std::max<size_t>(1, size_t(25.0 / estimate));
  double warm_ms = dev.elapsed_ms([&] {
    for (size_t i = 0; i < warm_runs; ++i) run(0);
  });
  size_t runs = std::max<size_t>(iters, size_t(200.0 / estimate));
  double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<double> both = dev.elapsed_ms_each(2 * runs, [&](size_t i) {
    if (i % 2 == 0) flush();
    else run(0);
  });
  std::vector<double> ms;
  for (size_t i = 1; i < both.size(); i += 2) ms.push_back(both[i]);
  return summarize(std::move(ms), warm_runs, warm_ms, wall);
}

// The same runs recorded once into a quiver::Graph and replayed: the device's time per run with
// the launches queued ahead of it (as a recorded decode step runs them), without the host's work
// per launch or the timer marks between runs. Timed one by one (time_runs), a run whose host side
// takes longer than its kernel leaves the device idle, and the marks keep the next launch from
// starting during the last wave: on an H200, matvec q4_0r_a8 14336x4096 took 14.2 us a run timed
// one by one and 11.3 queued back to back (docs/perf/NOTES.md). A replay holds at least 2 ms of
// runs (`estimate_ms` a run), so its own start is a small share; median of `replays` replays.
struct GraphTiming {
  double ms_per_run = 0;
  size_t runs_per_replay = 0, replays = 0;
};

GraphTiming time_graph(const quiver::Device& dev, const quiver_bench::Runner& run, size_t sets, double estimate_ms,
                       size_t replays) {
  size_t per = std::clamp<size_t>(size_t(std::ceil(2.0 / std::max(estimate_ms, 1e-6))), sets, 1000);
  per = (per + sets - 1) / sets * sets;
  quiver::Graph g = dev.record([&] {
    for (size_t i = 0; i < per; ++i) run(i % sets);
  });
  dev.elapsed_ms([&] { g.replay(); });   // a first replay may set up what the driver builds lazily
  std::vector<double> ms = dev.elapsed_ms_each(replays, [&](size_t) { g.replay(); });
  return {median(ms) / double(per), per, replays};
}

// The reference bandwidth: quiver's own 16-byte copy kernel over `bytes` per buffer, rotating
// `sets` input / output pairs (so that together they exceed the L2 cache, as the cases do).
// `lift_clocks`: keep the device busy for 0.5 s first (the first measurement of a run).
struct CopyRate {
  double GBps = 0;         // timed one run at a time (time_runs)
  double graph_GBps = 0;   // replayed from a Graph (time_graph); 0 when not asked for
};

CopyRate copy_bandwidth(const quiver::Device& dev, size_t bytes, size_t sets, size_t warmup, double warm_ms,
                        size_t iters, bool lift_clocks, bool graph) {
  quiver::Module m = bench_kernels::load(dev);
  uint32_t n4 = static_cast<uint32_t>(bytes / 16);
  std::vector<quiver::Buffer<float>> in, out;
  for (size_t s = 0; s < sets; ++s) {
    in.push_back(dev.alloc<float>(size_t(n4) * 4));
    out.push_back(dev.alloc<float>(size_t(n4) * 4));
    in.back().upload(std::vector<float>(size_t(n4) * 4, 1.0f));
  }
  uint32_t blocks = std::min<uint32_t>((n4 + 255) / 256, 65535);
  auto kernel = m.kernel("copy_f32x4");
  // Clocks first: keep the device busy for at least 0.5 s before anything is timed. An idle H100
  // starts a process at a low SM clock (345 MHz seen through Vulkan: copy 865 GB/s, then
  // 2795 GB/s in the next process), which the few warm-up runs of one case do not lift.
  auto t0 = std::chrono::steady_clock::now();
  while (lift_clocks && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.5)
    dev.elapsed_ms([&] {
      for (size_t r = 0; r < 8; ++r) kernel.launch(quiver::Grid{blocks}, in[r % sets], out[r % sets], n4);
    });
  quiver_bench::Runner run = [&](size_t s) { kernel.launch(quiver::Grid{blocks}, in[s], out[s], n4); };
  Timing t = time_runs(dev, run, sets, warmup, warm_ms, iters);
  const double moved = 2.0 * n4 * 16;
  CopyRate rate{moved / (t.median_ms * 1e-3) / 1e9, 0};
  if (graph) rate.graph_GBps = moved / (time_graph(dev, run, sets, t.median_ms, 30).ms_per_run * 1e-3) / 1e9;
  return rate;
}

// Empty filter: everything; otherwise any '|'-separated alternative contained in the label.
bool matches_filter(const std::string& label, const std::string& filter) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (true) {
    size_t bar = filter.find('|', start);
    std::string alt = filter.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!alt.empty() && label.find(alt) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    start = bar + 1;
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quiver-bench: the op library on the device, median of device-timed runs"};
  std::string backend, json_path, filter, anchors_path;
  size_t iters = 100, warmup = 10;
  double warm_ms = 500;
  bool quick = false, times = false, first = false, cpu_shapes = false;
  int load_repeats = 21;
  double rotate_mb = 256;
  app.add_option("--backend", backend, "cuda, vulkan, cpu (default: the best one found)");
  app.add_option("--json", json_path, "write the results here");
  app.add_option("--filter", filter, "only cases whose 'op dtype shape' contains this text ('|' separates alternatives)");
  app.add_option("--iters", iters, "timed runs per case (median reported; at least 100 for published figures)");
  app.add_option("--warmup", warmup, "untimed runs first (at least; matmul and attention follow do_bench instead)");
  app.add_option("--warm-ms", warm_ms, "device time of untimed runs first (at least; then on until the time per run settles)");
  app.add_option("--rotate-mb", rotate_mb, "rotate input sets until they span this many MB (> L2)");
  app.add_option("--anchors", anchors_path, "h100_baseline.json: print each case's ratio to its anchor");
  app.add_option("--load-repeats", load_repeats, "fresh module loads timed for the load median (0: none)");
  app.add_flag("--times", times, "JSON: each case's warm-up, the wall-clock start of its timed runs (unix s) and every run's ms");
  app.add_flag("--quick", quick, "small shapes (a smoke run for CPU / lavapipe)");
  app.add_flag("--cpu-shapes", cpu_shapes, "the CPU table's shapes (scripts/cpu-bench.py); copy over 64 MB");
  app.add_flag("--first-op", first, "only time this process's first op: device open, op library load, one rms_norm");
  CLI11_PARSE(app, argc, argv);
  if (first) return quiver_bench::first_op(backend, json_path);

  try {
    quiver::Device dev = quiver::Device::open(backend);
    nlohmann::json out;
    out["backend"] = dev.backend_name();
    out["device"] = dev.device_name();
    out["iters"] = iters;
    out["warmup"] = warmup;

    // Module load: the median of fresh loads (each a new Module: parse + verify the .qfb,
    // decompress the device's image, hand it to the driver) after the first load on this Device.
    auto median_load = [&](std::span<const std::byte> qfb) {
      std::vector<double> ms;
      if (load_repeats <= 0) return 0.0;
      for (int i = 0; i < load_repeats; ++i) {
        auto t = std::chrono::steady_clock::now();
        quiver::Module m = dev.load(qfb, "bench");
        ms.push_back(ms_since(t));
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    // The op library first, reported on its own line before the bench kernels are loaded, so
    // its load time is measured even where the bench kernels cannot load.
    auto t0 = std::chrono::steady_clock::now();
    quiver::Module lib = quiver::ops::library(dev);
    double first_load = ms_since(t0);
    double lib_median = median_load(quiver::ops::library_fatbin());
    std::printf("device: %s (%s), image %s; module load: op library %.2f ms first, %.2f ms median of %d "
                "(%zu-byte .qfb)\n",
                dev.device_name().c_str(), dev.backend_name().c_str(), std::string(lib.backend_image()).c_str(),
                first_load, lib_median, load_repeats, quiver::ops::library_fatbin().size());
    std::fflush(stdout);
    t0 = std::chrono::steady_clock::now();
    quiver::Module again = bench_kernels::load(dev);
    double bench_load = ms_since(t0);
    double bench_median = median_load(bench_kernels::fatbin());
    out["module_load_ms"] = {{"op_library_first", first_load}, {"bench_kernels_first", bench_load},
                             {"op_library_median", lib_median}, {"bench_kernels_median", bench_median},
                             {"op_library_qfb_bytes", quiver::ops::library_fatbin().size()},
                             {"image", std::string(again.backend_image())}};
    std::printf("module load: bench kernels %.2f ms first, %.2f ms median\n", bench_load, bench_median);

    // The L2 flush of the compute-bound cases (time_like_do_bench).
    const uint32_t flush_n4 = (quick ? (uint32_t(4) << 20) : (uint32_t(256) << 20)) / 16;
    quiver::Buffer<float> flush_buffer = dev.alloc<float>(size_t(flush_n4) * 4);
    auto fill = again.kernel("fill_f32x4");
    auto flush_l2 = [&] { fill.launch(quiver::Grid{std::min<uint32_t>((flush_n4 + 255) / 256, 65535)}, flush_buffer, 0.0f, flush_n4); };

    const size_t copy_bytes = quick ? (size_t(4) << 20) : cpu_shapes ? (size_t(64) << 20) : (size_t(512) << 20);
    double copy = copy_bandwidth(dev, copy_bytes, 2, warmup, warm_ms, iters, true, false).GBps;
    // The same copy kernel moving as many bytes as a memory-bound case (half read, half written),
    // rotated like the case: what a copy reaches at that size (launch ramp and last wave included),
    // by case size.
    std::map<size_t, CopyRate> copy_at;
    out["copy_GBps"] = copy;
    std::printf("copy (16-byte loads/stores, 2 x %zu MB): %.1f GB/s\n", copy_bytes >> 20, copy);

    nlohmann::json anchors;
    if (!anchors_path.empty()) std::ifstream(anchors_path) >> anchors;

    // "graph": the memory-bound cases replayed from a recorded Graph (time_graph), against the
    // same-size copy timed the same way.
    std::printf("%-18s %-5s %-18s %10s %10s %10s %8s %10s %8s\n", "op", "dtype", "shape", "median ms", "GB/s",
                "TFLOP/s", "vs copy", "graph GB/s", "vs copy@size");
    nlohmann::json results = nlohmann::json::array();
    for (const Case& c : cpu_shapes ? quiver_bench::cpu_cases() : quiver_bench::all_cases(quick)) {
      std::string label = c.op + " " + c.dtype + " " + c.shape;
      if (!matches_filter(label, filter)) continue;
      nlohmann::json r = {{"op", c.op}, {"dtype", c.dtype}, {"shape", c.shape}, {"bytes", c.bytes}, {"flops", c.flops}};
      try {
        const bool compute_bound = c.flops > 0 && c.op != "matvec";
        size_t sets = compute_bound ? 1 : std::clamp<size_t>(size_t(rotate_mb * 1e6 / c.bytes) + 1, 1, 16);
        quiver_bench::Runner run = c.setup(dev, sets);
        Timing t = compute_bound ? time_like_do_bench(dev, run, flush_l2, iters)
                                 : time_runs(dev, run, sets, warmup, warm_ms, iters);
        if (times) {   // to line the runs up with a clock log (nvidia-smi)
          r["wall_start_s"] = t.wall_start_s;
          r["warm_runs"] = t.warm_runs;
          r["warm_ms"] = t.warm_ms;
          r["times_ms"] = t.each_ms;
        }
        double gbps = c.bytes / (t.median_ms * 1e-3) / 1e9;
        double tflops = c.flops / (t.median_ms * 1e-3) / 1e12;
        r["median_ms"] = t.median_ms;
        r["min_ms"] = t.min_ms;
        r["runs"] = t.runs;
        r["GBps"] = gbps;
        r["frac_copy"] = gbps / copy;
        if (c.flops > 0) r["TFLOPs"] = tflops;
        std::string graph_cols;
        if (c.flops == 0 || c.op == "matvec") {
          size_t half = static_cast<size_t>(c.bytes / 2) / 16 * 16;
          if (!copy_at.contains(half))
            copy_at[half] = copy_bandwidth(dev, half, std::clamp<size_t>(size_t(rotate_mb * 1e6 / c.bytes) + 1, 2, 16),
                                           warmup, warm_ms, iters, false, true);
          r["copy_same_size_GBps"] = copy_at[half].GBps;
          try {
            GraphTiming g = time_graph(dev, run, sets, t.median_ms, 30);
            double graph_gbps = c.bytes / (g.ms_per_run * 1e-3) / 1e9;
            r["graph_ms_per_run"] = g.ms_per_run;
            r["graph_runs_per_replay"] = g.runs_per_replay;
            r["graph_replays"] = g.replays;
            r["graph_GBps"] = graph_gbps;
            r["copy_same_size_graph_GBps"] = copy_at[half].graph_GBps;
            r["frac_copy_same_size_graph"] = graph_gbps / copy_at[half].graph_GBps;
            char cols[64];
            std::snprintf(cols, sizeof cols, " %10.1f %7.1f%%", graph_gbps,
                          100 * graph_gbps / copy_at[half].graph_GBps);
            graph_cols = cols;
          } catch (const quiver::Error& e) {   // a case whose runs cannot be recorded keeps its timed runs
            r["graph_skipped"] = e.what();
          }
        }
        std::string vs;
        if (!c.anchor.empty() && anchors.contains(c.anchor)) {
          double a = anchors[c.anchor].get<double>();
          double mine = c.anchor.ends_with("GBps") ? gbps : tflops;
          r["anchor"] = c.anchor;
          r["anchor_value"] = a;
          r["ratio_to_anchor"] = mine / a;
          vs = "  anchor " + std::to_string(mine / a).substr(0, 5);
        }
        std::printf("%-18s %-5s %-18s %10.4f %10.1f %10.2f %7.1f%%%s%s\n", c.op.c_str(), c.dtype.c_str(),
                    c.shape.c_str(), t.median_ms, gbps, tflops, 100 * gbps / copy, graph_cols.c_str(), vs.c_str());
      } catch (const quiver::Error& e) {
        r["skipped"] = e.what();
        std::printf("%-18s %-5s %-18s skipped: %s\n", c.op.c_str(), c.dtype.c_str(), c.shape.c_str(), e.what());
      }
      std::fflush(stdout);
      results.push_back(r);
    }
    out["results"] = results;
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  } catch (const quiver::Error& e) {
    std::fprintf(stderr, "quiver-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
