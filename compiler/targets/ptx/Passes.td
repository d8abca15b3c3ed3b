// The ptx target's passes.
include "ir/PassBase.td"

// The passes that create LLVM / NVVM ops.
class NvvmPass<string argument> : QvPass<argument> {
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

def Dot4ToDp4a : NvvmPass<"qv-ptx-dot4-to-dp4a"> {
  let summary = "qv.dot4_i8 as one dp4a.s32.s32 (inline PTX)";
}
def MatrixToMmaSync : NvvmPass<"qv-ptx-matrix-to-mma-sync"> {
  let summary = "qv.matrix_* intrinsics as per-lane fragments, ldmatrix and mma.sync (sm_80+)";
}
def WarpgroupToWgmma : NvvmPass<"qv-ptx-warpgroup-to-wgmma"> {
  let summary = "qv.warpgroup_mma / _bt / wait as Hopper's wgmma (sm_90a), barriers fenced for the async proxy";
}
def AsyncCopyToCpAsync : NvvmPass<"qv-ptx-async-copy-to-cp-async"> {
  let summary = "qv::copy_async copies and group marks as cp.async / commit_group / wait_group (sm_80+)";
}
def Exp2ToEx2Approx : NvvmPass<"qv-ptx-exp2-to-ex2-approx"> {
  let summary = "f32 math.exp2 as ex2.approx.f32 (llvm.nvvm.ex2.approx.f)";
}
def RcpToRcpApprox : NvvmPass<"qv-ptx-rcp-to-rcp-approx"> {
  let summary = "qv::rcp (an afn f32 1 / x) as rcp.approx.ftz.f32 (llvm.nvvm.rcp.approx.ftz.f)";
}
def LaunchWaits : NvvmPass<"qv-ptx-launch-waits"> {
  let summary = "qv.wait_prior_launches as griddepcontrol.wait (inline PTX; kept on sm_90+ only)";
}
def DeviceFenceToPtx : NvvmPass<"qv-ptx-device-fence"> {
  let summary = "qv.device_fence as fence.acq_rel.gpu (inline PTX; LLVM 19's NVPTX does not select llvm.fence)";
}
def SubgroupsToShuffles : QvPass<"qv-ptx-subgroups-to-shuffles", ""> {
  let summary = "gpu.subgroup_size is 32; gpu.subgroup_reduce becomes gpu.shuffle butterflies";
}
def OutlineKernels : KernelListPass<"qv-ptx-outline-kernels"> {
  let summary = "each named kernel as a gpu.func kernel in a gpu.module @qv_ptx_<symbol> of its own: bare-pointer "
                "buffers, workgroup memory as .shared attributions or views of the dynamic shared memory";
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::NVVM::NVVMDialect"];
}
def ShareDynamicSharedMemory : NvvmPass<"qv-ptx-share-dynamic-shared-memory"> {
  let summary = "the lowered kernels' __dynamic_shmem__ globals as one external zero-length array "
                "__qv_dynamic_shared at the module's start (extern __shared__)";
}
def PlaceLaunchWaits : NvvmPass<"qv-ptx-place-launch-waits"> {
  let summary = "on the kernels' LLVM-dialect module, per arch: with overlap, every kernel waits (at its entry where "
                "it has no griddepcontrol.wait, else also before each return) and lets dependents launch after each "
                "wait; without, no waits";
  let options = [Option<"overlap", "overlap", "bool", "false",
                        "the arch has griddepcontrol (sm_90 and later): launches may overlap">];
}
