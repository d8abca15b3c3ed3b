// Private to the HSACO target: the steps between the legalised neutral IR and an LLVM module
// for one AMDGPU processor (docs/abi.md "HSACO").
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "format/manifest.h"
#include "llvm/IR/Module.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::hsaco {

// What the lowering needs to know about one processor ("gfx90a", "gfx1100", ...).
struct AmdArch {
  std::string name;
  unsigned wave_size = 64;   // 64 on GCN/CDNA (gfx9 and older), 32 on RDNA (gfx10 and newer)
  bool has_dot4 = false;     // llvm.amdgcn.sdot4 selects to one v_dot4* instruction
  std::string features() const { return wave_size == 32 ? "+wavefrontsize32" : "+wavefrontsize64"; }
};

// The AMDGPU generation of "gfx<major><minor hex><stepping hex>": 9 for gfx90a, 11 for gfx1151;
// -1 when `arch` is not spelled that way.
int gfx_major(const std::string& arch);

// KERNEL_LANGUAGE.md: double is CPU and CUDA only, other targets report an error. Throws
// TargetError naming the first place `func` uses f64 (AMD GPUs could run it; the language
// keeps one rule for every GPU target but PTX).
void reject_double(mlir::func::FuncOp func, const llvm_common::ErrorContext& where);

// qv.dot4_i8 operations become llvm.amdgcn.sdot4 (clamp off: wrapping, like dp4a) and the
// declaration goes away. Only for processors with `has_dot4`.
void lower_dot4_to_sdot4(mlir::ModuleOp module);

// The gpu.module the kernel with symbol `symbol` is outlined into.
std::string kernel_module_name(llvm::StringRef symbol);

// Moves each kernel named in `symbols` (func.func with qv.kernel and qv.block) into a new
// gpu.module @qv_hsaco_<symbol> at the end of `module`, in that order, as a gpu.func kernel ready
// for convert-gpu-to-rocdl (the pass qv-hsaco-outline-kernels):
// - buffers become memref<2^40 x T, 1>: the bare-pointer convention passes one 64-bit global
//   pointer (address space 1) per buffer; the extent is never checked, only the pointer passed;
// - the kernel's qv::shared allocations become views into one workgroup byte array of
//   ir::workgroup_layout's size, at its offsets (so the code object's LDS size is the manifest's
//   shared_bytes, which the front end computes the same way);
// - gpu.block_dim becomes the qv.block size, gpu.grid_dim the HSA dispatch packet's grid size
//   divided by it, gpu.subgroup_size `wave_size` (32 or 64); subgroup reductions become shuffle
//   butterflies over the whole wave (convert-gpu-to-rocdl turns shuffles into ds_bpermute).
// std::runtime_error names the kernel it cannot move.
void outline_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols, unsigned wave_size);

// On the translated LLVM module: code object v5, and every kernel declared free of the hidden
// (implicit) kernel arguments, so its kernarg segment holds exactly the manifest's parameters.
// Throws TargetError naming any external function the module still calls (there is no ROCm
// device library to link against).
void finish_llvm_module(llvm::Module& module, const llvm_common::ErrorContext& where);

}  // namespace quiver::compiler::hsaco
