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
def DeviceFenceToLlvmFence : QvPass<"qv-device-fence-to-llvm-fence", ""> {
  let summary = "qv.device_fence as llvm.fence acq_rel in the given synchronization scope (cpu and hsaco; "
                "ptx takes inline PTX: LLVM 19's NVPTX does not select fences)";
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
  let options = [Option<"syncscope", "syncscope", "std::string", "\"\"",
                        "LLVM's synchronization scope: empty for the whole system (cpu), agent for an AMD GPU">];
}
