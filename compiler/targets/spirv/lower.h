// From each kernel's gpu.module (prepare.h) to its spirv.module, made whole, and its words.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::spirv_target {

// Vulkan 1.2 (SPIR-V ≤ 1.5) with the capabilities quiver may use; spirv-update-vce later keeps
// only those a module really needs, so a kernel without i64 does not require shaderInt64.
// With `cooperative_matrix`: SPIR-V 1.6 (Vulkan 1.3) with SPV_KHR_cooperative_matrix and the
// Vulkan memory model that extension requires of shaders (the vulkan1.3_coopmat image, matrix_coop.h).
mlir::spirv::TargetEnvAttr vulkan12_target_env(mlir::MLIRContext* ctx, bool cooperative_matrix = false);

// Converts the gpu.module of each kernel in `symbols` (prepare.h's wrap_kernels) into a
// spirv.module @__spv__qv_spirv_<symbol> beside it: MLIR's conversions to the spirv dialect with
// quiver's patterns for subgroups, atomics and, with `cooperative_matrix`, matrix tiles as
// cooperative matrices and qv::dot4_i8 as OpSDot. The pass qv-spirv-convert-kernels; its
// std::runtime_error names the kernel and holds the conversion's diagnostics (an op left that no
// pattern lowers, with its location).
void convert_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols, bool cooperative_matrix);

// The steps on one kernel's spirv.module after spirv-lower-abi-attrs, each a pass of passes.cpp.
//
// Variables sharing a (set, binding) — a buffer and its word views — may address the same bytes:
// the Aliased decoration keeps the driver from reordering accesses across them.
void mark_aliased_bindings(mlir::spirv::ModuleOp module);

// Decorates the variables of set 0 at `bindings` NonWritable: the kernel's `const T*` buffers and
// its scalars, which it never writes. NVIDIA's driver then reads them through its read-only
// (non-coherent) cache path, as the PTX target's loads of const parameters: quantized matvec
// through Vulkan on the H100 gained 10-12% (docs/perf/NOTES.md). Not done in a kernel that loads
// from a buffer it writes (see lower.cpp).
void mark_read_only_bindings(mlir::spirv::ModuleOp module, const std::set<uint32_t>& bindings);

// MLIR 19's VCE deduction (spirv-update-vce) does not see the capability a BuiltIn decoration
// needs: a module that reads the subgroup lane or size (and does no subgroup arithmetic) gets
// GroupNonUniform here.
void require_subgroup_builtin_capability(mlir::spirv::ModuleOp module);

// SPIR-V 1.4 entry points list every global variable they use, workgroup memory included.
// Without that, a driver must assume each entry point uses all the module's workgroup arrays
// (NVIDIA's does, and then refuses kernels whose sum exceeds 48 KiB). Vulkan 1.2 takes 1.4, so
// the module's version becomes at least 1.4.
void list_interfaces(mlir::spirv::ModuleOp module);

// A module with cooperative matrices takes the Vulkan memory model, which SPV_KHR_cooperative_matrix
// requires of shaders; nothing quiver emits depends on GLSL450's model (barriers carry explicit
// AcquireRelease semantics for the memory they order, no access is Coherent or Volatile). Other
// modules keep GLSL450's: under the Vulkan model device-scope atomics would need one more
// capability and device feature (VulkanMemoryModelDeviceScope).
void use_vulkan_memory_model(mlir::spirv::ModuleOp module);

// Serializes `module` to SPIR-V words. False and `error` set on failure.
bool serialize_module(mlir::spirv::ModuleOp module, std::vector<uint32_t>& words,
                      std::string& error);

}  // namespace quiver::compiler::spirv_target
