// Running quiverc's build jobs (build_jobs.h) in worker processes forked after the front end.
//
// The compiler is single-threaded (the MLIR context has multithreading off), so a fork()ed
// copy of it is a complete compiler holding the front end's result: each worker takes one job at
// a time from this process, compiles it and sends its images (or its error) back through a
// pipe; this process hands out the jobs in order and collects the results in job order. What a
// job writes to stderr (-v output, tool messages, a crash report) goes to a file of its worker
// and is copied to this process's stderr in job order, so the output reads as a serial build's.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "driver/build_jobs.h"

namespace quiver::compiler {

struct JobRun {
  BuildJobResult result;
  // The wait status of the worker that died (a signal, or exit() inside a target) while it
  // ran this job, without a result; 0 when the job gave one.
  int died_status = 0;
  bool died() const { return died_status != 0; }
};

// Runs job(0) .. job(count - 1) and returns their runs in job order, up to and including the
// first that failed or died (every job when none did): exactly the jobs a serial build reaches.
// With `workers` > 1 (and this process single-threaded: fork() copies one thread only), up to
// that many worker processes run jobs at once, and a job after a failed one is cancelled or
// never started; with 1 the jobs run here, one after the other. Either way, each job's stderr
// has been written, in job order, when its run is returned.
std::vector<JobRun> run_jobs(size_t count, unsigned workers, const std::function<BuildJobResult(size_t)>& job);

// The CPUs this process may run on (its affinity mask), at least 1: quiverc's default -j.
unsigned available_cpus();

// Whether this process has a single thread (the condition for forking workers).
bool single_threaded();

// Ends this process the way a worker ended (`wait_status` from waitpid): the same signal, or
// the same exit status.
[[noreturn]] void end_like(int wait_status);

}  // namespace quiver::compiler
