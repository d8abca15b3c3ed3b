// The one interface every compiler target implements. A target is one folder under
// compiler/targets/ and one line in registry.cpp, the registry that quiverc's --targets, the
// front end's QV_TARGETS check and the build plan all read. A target takes the neutral IR that
// the front end produced (docs/ir.md) and returns one or more images for the fat binary.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "format/manifest.h"

namespace mlir { class ModuleOp; }

namespace quiver::compiler {

// A kernel that cannot be built for a target: the build fails naming kernel, target and reason.
class TargetError : public std::runtime_error {
 public:
  TargetError(std::string kernel, std::string target, const std::string& reason)
      : std::runtime_error(target + ": kernel '" + kernel + "': " + reason),
        kernel_(std::move(kernel)), target_(std::move(target)) {}
  const std::string& kernel() const { return kernel_; }
  const std::string& target() const { return target_; }

 private:
  std::string kernel_, target_;
};

struct TargetOptions {
  std::vector<std::string> archs;   // from --targets (e.g. {"sm_80", "sm_90"}); empty = target default
  std::string keep_temps_dir;       // when non-empty, write intermediate files here
  bool verbose = false;
};

struct TargetImage {
  format::Target target;
  std::string arch;
  std::vector<std::byte> data;
  std::vector<std::string> kernels;   // kernel symbols inside this image
  std::vector<std::string> requirements;   // device features the image needs (format::Image)
  bool programmatic_launch = false;        // format::Image::programmatic_launch
  std::vector<std::byte> frame;       // `data` compressed (format::compress_image), made by the build job
};

// quiverc -v: the pass pipeline (textual, as quiver-opt takes it) that `target` runs on each
// `anchor` op ("builtin.module", "gpu.module").
inline void print_pipeline(const TargetOptions& options, std::string_view target, std::string_view anchor,
                           std::string_view pipeline) {
  if (!options.verbose) return;
  fprintf(stderr, "%.*s: pipeline %.*s(%.*s)\n", int(target.size()), target.data(), int(anchor.size()), anchor.data(),
          int(pipeline.size()), pipeline.data());
}

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;   // its registry line's name, for its own messages
  // The archs built when --targets names none ({} for targets without archs).
  virtual std::vector<std::string> default_archs() const { return {}; }
  // `module` is a private clone of the neutral IR holding only `kernels` (the target may
  // mutate it). `kernels` are the manifest entries (symbol, params, block) of those kernels.
  virtual std::vector<TargetImage> compile(mlir::ModuleOp module,
                                           std::span<const format::Kernel> kernels,
                                           const TargetOptions& options) = 0;
  // `archs` (all given, in --targets order) split into groups that share no lowering work, so
  // that the driver may compile each group in a compile() call of its own (in parallel) without
  // repeating any: a split build's images come group by group, in the order returned. `module`
  // is the whole neutral IR and `kernels` the ones this build holds. When in doubt (an arch the
  // target does not know), one group, for compile() to report. Default: one group.
  virtual std::vector<std::vector<std::string>> arch_groups(const mlir::ModuleOp& module,
                                                            std::span<const format::Kernel> kernels,
                                                            const std::vector<std::string>& archs) const {
    (void)module;
    (void)kernels;
    return {archs};
  }
};

// A registry line.
struct TargetEntry {
  std::string_view name;                    // "ptx": the --targets and QV_TARGETS spelling
  std::span<const format::Target> images;   // the image kinds its compile() may return
  std::unique_ptr<Target> (*create)();
  // Registers the target's passes (its folder's, and those of ir/passes.h its pipelines name):
  // quiver-opt runs them; compile() calls it before building its pipelines. Idempotent.
  void (*register_passes)();
};
// Every target, in the order quiverc builds them when --targets names none (which is the order
// of their images in the fat binary).
std::span<const TargetEntry> target_registry();
const TargetEntry* find_target(std::string_view name);   // nullptr when no line has that name
// Every target's passes and the neutral IR's (quiver-opt's registration).
void register_passes();
std::vector<std::string> target_names();                 // the registry's names, in its order

}  // namespace quiver::compiler
