// quiver-bench --first-op: how long a fresh process waits for its first op. Opens the device,
// loads the op library, runs one rms_norm (f32, 8 x 1024) and downloads it, timing each step
// with the host clock and the process's CPU time (every thread: it barely depends on what else
// the machine runs), plus the process's age when main() began (/proc/self/stat). Checks the
// result against a host reference. Run it in a new process each time: a second measurement in
// the same process would find the device, the module and the kernel's pipeline ready.
#pragma once

#include <string>

namespace quiver_bench {

// Prints one line, writes JSON to json_path (when not empty); returns the process exit code.
int first_op(const std::string& backend, const std::string& json_path);

}  // namespace quiver_bench
