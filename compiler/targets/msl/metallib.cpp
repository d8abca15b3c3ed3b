// Never run: no machine quiver is built on so far has Apple's tools (docs/targets.md).
#include "targets/msl/metallib.h"

#include <cstdio>

#include "targets/llvm_common/process.h"

namespace quiver::compiler::msl {

std::optional<std::string> find_apple_metal_tools() {
  std::optional<std::filesystem::path> xcrun = llvm_common::find_executable("xcrun");
  if (!xcrun) return std::nullopt;
  for (const char* tool : {"metal", "metallib"}) {
    llvm_common::ProcessResult r = llvm_common::run_process({xcrun->string(), "-sdk", "macosx", "-f", tool});
    if (r.exit_code != 0) return std::nullopt;
  }
  return xcrun->string();
}

std::vector<std::byte> build_metallib(const std::string& xcrun, const msl_image::Image& image,
                                      const std::string& all_kernels, const TargetOptions& options) {
  llvm_common::ScratchDir dir;
  const std::string standard =
      "-std=macos-metal" + std::to_string(image.msl_major) + "." + std::to_string(image.msl_minor);
  std::vector<std::string> link = {xcrun, "-sdk", "macosx", "metallib"};
  for (size_t i = 0; i < image.kernels.size(); ++i) {
    const msl_image::KernelSource& k = image.kernels[i];
    auto source = dir.path() / ("k" + std::to_string(i) + ".metal");
    auto air = dir.path() / ("k" + std::to_string(i) + ".air");
    llvm_common::write_file(source, k.source);
    llvm_common::ProcessResult r = llvm_common::run_process(
        {xcrun, "-sdk", "macosx", "metal", standard, "-O2", "-c", source.string(), "-o", air.string()});
    if (options.verbose && !r.output.empty()) fprintf(stderr, "%s", r.output.c_str());
    if (r.exit_code != 0) throw TargetError(k.symbol, "msl", "Apple's metal compiler rejected the MSL:\n" + r.output);
    link.push_back(air.string());
  }
  auto out = dir.path() / "kernels.metallib";
  link.push_back("-o");
  link.push_back(out.string());
  llvm_common::ProcessResult r = llvm_common::run_process(link);
  if (r.exit_code != 0) throw TargetError(all_kernels, "msl", "xcrun metallib failed:\n" + r.output);
  return llvm_common::read_file(out);
}

}  // namespace quiver::compiler::msl
