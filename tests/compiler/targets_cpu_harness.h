// Test support for the LLVM-based targets: parse hand-written neutral IR, derive manifest
// entries from it, compile with a target, and load + run CPU images per docs/abi.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "targets/target.h"

namespace quiver::test {

struct ParsedIR {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<format::Kernel> kernels;   // one per qv.kernel function, in order
};

// Parses `ir` (fails the test on a syntax error) and describes each kernel the way the front
// end would: params from the signature, block from qv.block, shared_bytes from
// workgroup_bytes, uses_barrier when gpu.barrier occurs.
ParsedIR parse_ir(const std::string& ir);

// `options` plus, when QUIVER_TEST_KEEP_TEMPS=dir is set (a debugging aid), keep_temps_dir.
compiler::TargetOptions with_debug_options(compiler::TargetOptions options = {});

std::vector<compiler::TargetImage> compile(compiler::Target& target, const std::string& ir,
                                           const compiler::TargetOptions& options = {});

// A CPU image loaded the way the runtime does it: memfd + dlopen("/proc/self/fd/N").
class LoadedCpuImage {
 public:
  explicit LoadedCpuImage(std::span<const std::byte> image);
  ~LoadedCpuImage();
  LoadedCpuImage(const LoadedCpuImage&) = delete;
  LoadedCpuImage& operator=(const LoadedCpuImage&) = delete;
  void* symbol(const std::string& name) const;   // fails the test when missing

 private:
  void* handle_ = nullptr;
  int fd_ = -1;
};

// Runs kernel `fn` on `grid` blocks per docs/abi.md. `args[i]` points at parameter i's value
// (for a buffer: at a void* holding the host pointer). Barrier kernels run each block with one
// std::thread per block thread and a std::barrier behind ctx->barrier.
void run_cpu_kernel(void* fn, const format::Kernel& kernel, std::array<uint32_t, 3> grid,
                    const std::vector<void*>& args);

// Image bytes as text (PTX).
std::string image_text(const compiler::TargetImage& image);

}  // namespace quiver::test
