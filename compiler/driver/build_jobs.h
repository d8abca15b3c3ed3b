// The target builds of one quiverc run, planned after the front end: one BuildJob per target,
// per set of archs whose kernel selections (QV_TARGETS) agree, per arch group the target says
// shares no work (Target::arch_groups). Jobs are independent: each compiles its own copy of the
// neutral IR, so they may run in any process, in any order; their images go into the fat binary
// in job order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/targets_option.h"
#include "frontend/frontend.h"
#include "targets/target.h"

namespace quiver::compiler {

struct BuildJob {
  const TargetEntry* entry = nullptr;
  std::vector<std::string> archs;   // passed as TargetOptions::archs; empty for targets without archs
  std::vector<size_t> kernels;      // indices into the front end's kernels
};

// Jobs in the order a serial build runs them: requests in order, then arch selections in the
// order of their first arch, then arch groups.
std::vector<BuildJob> plan_build_jobs(const std::vector<TargetRequest>& requests, const frontend::Result& fe);

struct BuildJobOptions {
  std::string keep_temps_dir;   // --keep-temps (the job writes under <dir>/<target>)
  bool verbose = false;
};

// What a job gives back: its images, or the error quiverc reports for it (the text after
// "quiverc: error: ").
struct BuildJobResult {
  std::vector<TargetImage> images;
  std::optional<std::string> error;
};

// Compiles `job` from a private copy of the neutral IR holding only its kernels. With
// `options.verbose`, ends with a line on stderr giving the job's wall and CPU time.
BuildJobResult run_build_job(const BuildJob& job, const frontend::Result& fe, const BuildJobOptions& options);

}  // namespace quiver::compiler
