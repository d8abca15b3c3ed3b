// Running external tools (ptxas, ld.lld) from the LLVM-based targets, and scratch files for them.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace quiver::compiler::llvm_common {

struct ProcessResult {
  int exit_code = -1;        // the tool's exit status; -1 when it died from a signal
  std::string output;        // stdout and stderr together
};

// Runs argv[0] (a path) with argv; throws std::runtime_error when it cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv);

// The first executable `name` in `dirs` (in order), then on PATH.
std::optional<std::filesystem::path> find_executable(std::string_view name,
                                                     std::span<const std::string> dirs = {});

// A private directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, std::string_view data);
std::vector<std::byte> read_file(const std::filesystem::path& path);

}  // namespace quiver::compiler::llvm_common
