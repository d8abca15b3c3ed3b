// The hsaco target's passes.
include "ir/PassBase.td"

def Dot4ToSdot4 : QvPass<"qv-hsaco-dot4-to-sdot4"> {
  let summary = "qv.dot4_i8 as llvm.amdgcn.sdot4 (processors with dot4)";
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}
def OutlineKernels : KernelListPass<"qv-hsaco-outline-kernels", [
    Option<"wave_size", "wave-size", "unsigned", "64", "lanes of a wave: 64 (GCN, CDNA) or 32 (RDNA)">]> {
  let summary = "each named kernel as a gpu.func kernel in a gpu.module @qv_hsaco_<symbol> of its own: global "
                "bare-pointer buffers, workgroup memory as views of one byte array, block and grid sizes and the "
                "wave size as values";
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::LLVM::LLVMDialect", "mlir::ROCDL::ROCDLDialect"];
}
