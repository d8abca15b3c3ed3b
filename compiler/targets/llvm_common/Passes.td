// The LLVM-based targets' passes on LLVM-dialect IR (llvm_common.h describes each rewrite).
include "ir/PassBase.td"

def MathToLlvmIntrinsics : QvPass<"qv-math-to-llvm-intrinsics", ""> {
  let summary = "the exact math ops qv-lower-math leaves become calls of LLVM's generic intrinsics (llvm.sqrt.f32, ...)";
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}
def AlignVectorAccesses : QvPass<"qv-align-vector-accesses", ""> {
  let summary = "llvm.load / llvm.store of a vector get the alignment of the vector's size (qv::load / qv::store's promise)";
}
def AlignWorkgroupGlobals : QvPass<"qv-align-workgroup-globals", ""> {
  let summary = "workgroup (address space 3) llvm.mlir.global arrays get the alignment ir::workgroup_layout assumes";
}
