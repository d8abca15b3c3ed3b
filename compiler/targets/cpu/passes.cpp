// The cpu target's passes: a kernel's block as thread loops, its subgroups as lanes, and the
// kernel as its per-thread function.
#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/cpu/barrier_fission.h"
#include "targets/cpu/subgroup_lanes.h"
#include "targets/cpu/thread_function.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

namespace {
constexpr ir::PassText kBarriersToLoops{
    "qv-cpu-barriers-to-loops",
    "each func.func with gpu.barrier and qv.block runs its block as loops over the threads, split at the "
    "barriers (those under other than scf.for / scf.if / scf.while stay as they are)"};
using BarriersToLoopsPass = ir::FunctionPass<kBarriersToLoops, cpu::barriers_to_loops_in_module>;
constexpr ir::PassText kSubgroupsToLanes{
    "qv-cpu-subgroups-to-lanes",
    "each func.func with subgroup operations, qv.block and no gpu.barrier (run qv-cpu-barriers-to-loops first) "
    "runs its subgroups as lanes of its thread loops: a loop over the subgroups around a loop over gpu.subgroup_size "
    "lanes, split at each subgroup operation"};
using SubgroupsToLanesPass = ir::FunctionPass<kSubgroupsToLanes, cpu::subgroups_to_lanes_in_module>;
constexpr ir::PassText kThreadFunctions{
    "qv-cpu-thread-functions",
    "each named kernel as its per-thread function __qv_thread_<symbol>: its block as thread loops where it can, "
    "the gpu ids, shared memory and ctx as arguments, barriers as calls of ctx->barrier"};
using ThreadFunctionsPass = ir::KernelListPass<kThreadFunctions, cpu::make_thread_functions, mlir::LLVM::LLVMDialect>;
}  // namespace

// The cpu target's pipelines name upstream passes, those of the LLVM-based targets and its own.
void register_cpu_passes() {
  ir::register_once<BarriersToLoopsPass, SubgroupsToLanesPass, ThreadFunctionsPass>(llvm_common::register_passes);
}

}  // namespace quiver::compiler
