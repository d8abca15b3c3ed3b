// The passes of the LLVM-based targets (ptx, hsaco, cpu) on their LLVM-dialect IR.
#include "targets/llvm_common/passes.h"

#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/llvm_common/llvm_common.h"

namespace quiver::compiler::llvm_common {

namespace {

constexpr ir::PassText kMathToLlvmIntrinsics{
    "qv-math-to-llvm-intrinsics",
    "the exact math ops qv-lower-math leaves become calls of LLVM's generic intrinsics (llvm.sqrt.f32, ...)"};
constexpr ir::PassText kAlignVectorAccesses{
    "qv-align-vector-accesses",
    "llvm.load / llvm.store of a vector get the alignment of the vector's size (qv::load / qv::store's promise)"};
constexpr ir::PassText kAlignWorkgroupGlobals{
    "qv-align-workgroup-globals",
    "workgroup (address space 3) llvm.mlir.global arrays get the alignment ir::workgroup_layout assumes"};
using MathToLlvmIntrinsicsPass =
    ir::FunctionPass<kMathToLlvmIntrinsics, math_to_intrinsics, void, mlir::LLVM::LLVMDialect>;
using AlignVectorAccessesPass = ir::FunctionPass<kAlignVectorAccesses, align_vector_accesses, void>;
using AlignWorkgroupGlobalsPass = ir::FunctionPass<kAlignWorkgroupGlobals, align_workgroup_globals, void>;

}  // namespace

void register_passes() {
  ir::register_once<MathToLlvmIntrinsicsPass, AlignVectorAccessesPass, AlignWorkgroupGlobalsPass>(ir::register_passes);
}

void run_passes(mlir::ModuleOp module, const std::string& pipeline, const ErrorContext& where,
                const TargetOptions& options) {
  print_pipeline(options, where.target, "builtin.module", pipeline);
  std::string error;
  if (!ir::run_pipeline(module, pipeline, error)) throw TargetError(where.kernel, where.target, error);
}

}  // namespace quiver::compiler::llvm_common
