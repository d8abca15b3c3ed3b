// The cpu target's passes: a kernel's block as thread loops, its subgroups as lanes, and the
// kernel as its per-thread function.
include "ir/PassBase.td"

def BarriersToLoops : QvPass<"qv-cpu-barriers-to-loops"> {
  let summary = "each func.func with gpu.barrier and qv.block runs its block as loops over the threads, split at the "
                "barriers (those under other than scf.for / scf.if / scf.while stay as they are)";
}
def SubgroupsToLanes : QvPass<"qv-cpu-subgroups-to-lanes"> {
  let summary = "each func.func with subgroup operations, qv.block and no gpu.barrier (run qv-cpu-barriers-to-loops "
                "first) runs its subgroups as lanes of its thread loops: a loop over the subgroups around a loop over "
                "gpu.subgroup_size lanes, split at each subgroup operation";
}
def ThreadFunctions : KernelListPass<"qv-cpu-thread-functions"> {
  let summary = "each named kernel as its per-thread function __qv_thread_<symbol>: its block as thread loops where "
                "it can, the gpu ids, shared memory and ctx as arguments, barriers as calls of ctx->barrier";
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}
