// Shared steps of the LLVM-based targets (ptx, cpu): MLIR pass pipelines with their
// diagnostics turned into TargetError, translation to LLVM IR, the O3 pipeline, code emission.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Target/TargetMachine.h"
#include "format/manifest.h"
#include "ir/legalize.h"
#include "ir/layout.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "targets/target.h"

namespace quiver::compiler::llvm_common {

// Errors of one step: `kernel` names the kernel (or a list of them) being built.
struct ErrorContext {
  std::string kernel;
  std::string target;
};

// Registers every dialect the lowering creates, and the LLVM IR translations, in the context.
void prepare_context(mlir::MLIRContext& context);

// The kernel func.func with qv.kernel named `symbol`; TargetError when missing.
mlir::func::FuncOp find_kernel(mlir::ModuleOp module, std::string_view symbol,
                               const ErrorContext& where);

// qv.block of a kernel as (x, y, z); TargetError when missing or malformed.
std::array<uint32_t, 3> kernel_block(mlir::func::FuncOp func, const ErrorContext& where);

// Checks that the IR of `func` agrees with its manifest entry (block shape, parameter count,
// buffer vs scalar, buffers as memref<?xT>) and returns the block; TargetError naming the
// mismatch otherwise. Both LLVM-based targets rely on this before rewriting the signature.
std::array<uint32_t, 3> check_signature(mlir::func::FuncOp func, const format::Kernel& kernel,
                                        const ErrorContext& where);

// Checks, for each of `kernels` in order, that its IR agrees with its manifest entry (it exists,
// check_signature, workgroup_layout) before a pass takes it out of its func.func, and returns
// the symbols as a kernels= option's value ("a,b,c"). TargetError names the kernel that does not.
std::string checked_kernel_list(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                const std::string& target);

// A new gpu.module @`module_name` at the end of `module` holding an empty gpu.func kernel named
// as `func`, of parameters `inputs` and workgroup attributions `workgroup`, with the known block
// size `block`: where a kernel's body moves (move_body_into) on the targets lowered by MLIR's
// gpu conversions.
mlir::gpu::GPUFuncOp create_kernel_func(mlir::ModuleOp module, mlir::func::FuncOp func, const std::string& module_name,
                                        llvm::ArrayRef<mlir::Type> inputs, llvm::ArrayRef<mlir::Type> workgroup,
                                        const std::array<uint32_t, 3>& block);

// ir::workgroup_layout of kernel `func`: TargetError when it cannot be laid out or needs more
// than the manifest's shared_bytes.
quiver::ir::WorkgroupLayout workgroup_layout(mlir::func::FuncOp func, const format::Kernel& kernel,
                                             const ErrorContext& where);
// The GPU targets (ptx, hsaco): `slot`'s array as a view of the workgroup byte array `bytes` at
// the slot's offset, built at `b`'s insertion point.
mlir::Value workgroup_view(mlir::OpBuilder& b, const quiver::ir::WorkgroupSlot& slot, mlir::Value bytes);
// Moves kernel `func`'s body into the new kernel `gfunc` (the same parameters, in order, and
// whatever `gfunc`'s entry block already holds first): the workgroup alloca of `layout.slots[j]`
// becomes `memory[j]`, func.return becomes gpu.return, and `func` is erased.
void move_body_into(mlir::func::FuncOp func, mlir::gpu::GPUFuncOp gfunc, const quiver::ir::WorkgroupLayout& layout,
                    llvm::ArrayRef<mlir::Value> memory);

// Moves the ops of a kernel's lowered gpu.module (but its gpu.module_end) to the end of
// `module`, which the kernels' images share, and erases it.
void move_kernel_module(mlir::gpu::GPUModuleOp gpu_module, mlir::ModuleOp module);

// qv::load / qv::store promise alignment to the vector's size (KERNEL_LANGUAGE.md); MLIR 19's
// vector lowering only records the element's. Raises every vector load/store of the LLVM
// dialect ops under `op` to its full size, so NVPTX emits one ld.global.v4 for a float4.
void align_vector_accesses(mlir::Operation* op);
// Workgroup (shared, LDS: address space 3 on NVPTX and AMDGPU) globals get the 64-byte alignment
// ir::workgroup_layout assumes, so that the 16-byte vector accesses above and ldmatrix hold on
// every array, not only on the first (MLIR gives them their element's alignment).
void align_workgroup_globals(mlir::Operation* root);
// The math ops ir::lower_math leaves (sqrt, fma, fabs, floor, ceil, roundeven, trunc, copysign)
// become calls of the generic LLVM intrinsics (llvm.sqrt.f32, ...): exact NVPTX / AMDGPU
// instructions or sequences. Not the typed LLVM-dialect ops: convert-gpu-to-nvvm and
// convert-gpu-to-rocdl rewrite those into calls of libdevice (__nv_sqrtf) or ROCm's __ocml_*,
// which a PTX or HSACO image cannot link.
void math_to_intrinsics(mlir::Operation* root);

// Runs a textual pass list (e.g. "convert-scf-to-cf,convert-func-to-llvm") on `op` itself;
// the diagnostics, with their locations, become the TargetError's reason. Upstream passes and
// those of passes.h are registered; a target registers its own before.
void run_pipeline(mlir::Operation* op, std::string_view pipeline, const ErrorContext& where);

// Verifies `op`; a failure becomes a TargetError quoting the verifier.
void verify(mlir::Operation* op, const ErrorContext& where);

// Translates a builtin.module holding only LLVM-dialect (and NVVM) ops.
std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext& llvm_context,
                                        const ErrorContext& where);

std::unique_ptr<llvm::TargetMachine> create_target_machine(const std::string& triple,
                                                           const std::string& cpu,
                                                           const std::string& features,
                                                           const ErrorContext& where);

// Sets the data layout / triple from `machine` and runs LLVM's O3 pipeline. With
// `no_library_calls`, LLVM may not turn loops into calls of libc functions (memset, ...).
void optimize(llvm::Module& module, llvm::TargetMachine& machine, bool no_library_calls);

// Machine code (object file) or assembly text (PTX) for `module`.
std::string emit(llvm::Module& module, llvm::TargetMachine& machine, llvm::CodeGenFileType kind,
                 const ErrorContext& where);

// With --keep-temps, writes `data` as `name` into the directory.
void keep_temp(const TargetOptions& options, const std::string& name, std::string_view data);

std::string print(mlir::Operation* op);
std::string print(const llvm::Module& module);

}  // namespace quiver::compiler::llvm_common
