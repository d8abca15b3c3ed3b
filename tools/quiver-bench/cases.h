// The benchmark cases of quiver-bench: each op of quiver::ops at the shapes of the H100 reference
// figures (torch / Triton results kept outside the repository, read with --anchors; plus decode
// shapes), with the bytes it must move and the flops it must do, and the anchor figure it is
// compared with.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <quiver/runtime.h>

namespace quiver_bench {

// Runs the op once on input set `set` (of `sets` allocated by setup()).
using Runner = std::function<void(size_t set)>;

struct Case {
  std::string op;        // "rms_norm"
  std::string dtype;     // "f32", "bf16", "f16", "q8_0", "int8"
  std::string shape;     // "32768x4096"
  double bytes = 0;      // read + written once per call
  double flops = 0;      // 0 for memory-bound ops
  std::string anchor;    // key in h100_baseline.json, empty when there is none
  // Allocates `sets` independent inputs/outputs (so a rotation never finds them in L2) and
  // returns the runner; throws quiver::Error when the op or dtype is not available.
  std::function<Runner(const quiver::Device&, size_t sets)> setup;
};

// quick: small shapes, for a smoke run on the CPU backend or lavapipe.
std::vector<Case> all_cases(bool quick);
// The CPU table's shapes (scripts/cpu-bench.py).
std::vector<Case> cpu_cases();

}  // namespace quiver_bench
