// Front end: kernel .cpp files -> Clang AST (LibTooling) -> quiver's neutral IR (docs/ir.md).
#pragma once

#include <string>
#include <vector>

#include "format/manifest.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir { class MLIRContext; }

namespace quiver::frontend {

struct Options {
  std::vector<std::string> include_dirs;   // -I
  std::vector<std::string> defines;        // -D name=value
  std::string quiver_include_dir;          // where <quiver/kernel.h> lives
  std::string clang_resource_dir;          // Clang's builtin headers (<stdint.h>, ...)
  // The target names QV_TARGETS may use: the compiler's target registry (targets/target.h),
  // which the front end does not link.
  std::vector<std::string> targets;
  // Threads for normalisation's per-function passes (mem2reg dominates the front end), when
  // the context has multithreading off; they are gone again when compile() returns, so the
  // caller may fork. The IR is the same for any count.
  unsigned threads = 1;
};

// One kernel as the front end saw it: its manifest entry plus the targets QV_TARGETS allows
// (empty = every requested target).
struct KernelEntry {
  format::Kernel manifest;
  std::vector<std::string> allowed_targets;   // spelling of QV_TARGETS: "ptx", "spirv", "ptx:sm_90a" (one arch), ...
};

struct Result {
  mlir::OwningOpRef<mlir::ModuleOp> module;   // neutral IR, one func.func per kernel (normalised)
  std::vector<KernelEntry> kernels;
  std::vector<std::string> dependencies;      // every file read (sources and headers), for --depfile
  std::string source_text;                    // concatenated main sources, for the source hash
};

// Parses and compiles every source. Diagnostics (clang-style `file:line:col: error: ...` with
// the source line) go to stderr; returns false when any error was reported.
bool compile(mlir::MLIRContext& context, const std::vector<std::string>& sources,
             const Options& options, Result& result);

}  // namespace quiver::frontend
