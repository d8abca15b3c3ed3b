// From gpu.module kernels (prepare.h) to one serialized SPIR-V module for Vulkan 1.2.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
namespace gpu { class GPUModuleOp; }
}  // namespace mlir

namespace quiver::compiler::spirv_target {

// Vulkan 1.2 (SPIR-V ≤ 1.5) with the capabilities quiver may use; spirv-update-vce later keeps
// only those a module really needs, so a kernel without i64 does not require shaderInt64.
// With `cooperative_matrix`: SPIR-V 1.6 (Vulkan 1.3) with SPV_KHR_cooperative_matrix and the
// Vulkan memory model that extension requires of shaders (the vulkan1.3_coopmat image, matrix_coop.h).
mlir::spirv::TargetEnvAttr vulkan12_target_env(mlir::MLIRContext* ctx, bool cooperative_matrix = false);

// Converts `gpu_module` (one kernel) in place into a spirv.module with its ABI lowered
// (descriptor-bound globals, OpEntryPoint, LocalSize). On failure returns null and sets `error`
// to the conversion's diagnostics.
// With `cooperative_matrix`, matrix tiles become cooperative matrices (matrix_coop.h).
mlir::spirv::ModuleOp convert_kernel_module(mlir::gpu::GPUModuleOp gpu_module, std::string& error,
                                            bool cooperative_matrix = false);

// Decorates the variables of set 0 at `bindings` NonWritable: the kernel's `const T*` buffers and
// its scalars, which it never writes. NVIDIA's driver then reads them through its read-only
// (non-coherent) cache path, as the PTX target's loads of const parameters: quantized matvec
// through Vulkan on the H100 gained 10-12% (docs/perf/NOTES.md). Not done in a kernel that loads
// from a buffer it writes (see lower.cpp).
void mark_read_only_bindings(mlir::spirv::ModuleOp module, const std::set<uint32_t>& bindings);

// Merges per-kernel modules into one (identical globals are shared; the spirv target passes one
// module, its kernel's), then deduces the minimal version/capabilities/extensions, lists entry
// point interfaces and, where cooperative matrices are used, takes the Vulkan memory model. Null
// and `error` set on failure.
mlir::OwningOpRef<mlir::spirv::ModuleOp> combine_modules(
    llvm::ArrayRef<mlir::spirv::ModuleOp> modules, std::string& error, bool cooperative_matrix = false);

// Runs spirv-update-vce on `module` (attached or not). False and `error` set on failure.
bool update_vce(mlir::spirv::ModuleOp module, std::string& error);

// Serializes `module` to SPIR-V words. False and `error` set on failure.
bool serialize_module(mlir::spirv::ModuleOp module, std::vector<uint32_t>& words,
                      std::string& error);

}  // namespace quiver::compiler::spirv_target
