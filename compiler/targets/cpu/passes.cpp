// The cpu target's passes (Passes.td).
#include "ir/passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/cpu/barrier_fission.h"
#include "targets/cpu/subgroup_lanes.h"
#include "targets/cpu/thread_function.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler::cpu {

#define GEN_PASS_DECL
#define GEN_PASS_DEF_BARRIERSTOLOOPS
#define GEN_PASS_DEF_SUBGROUPSTOLANES
#define GEN_PASS_DEF_THREADFUNCTIONS
#include "targets/cpu/Passes.h.inc"

namespace {

using BarriersToLoopsPass = ir::RewritePass<impl::BarriersToLoopsBase, barriers_to_loops_in_module>;
using SubgroupsToLanesPass = ir::RewritePass<impl::SubgroupsToLanesBase, subgroups_to_lanes_in_module>;
using ThreadFunctionsPass = ir::KernelListRewritePass<impl::ThreadFunctionsBase, make_thread_functions>;

}  // namespace


}  // namespace quiver::compiler::cpu

namespace quiver::compiler {

// The cpu target's pipelines name upstream passes, those of the LLVM-based targets and its own.
void register_cpu_passes() {
  using namespace cpu;
  ir::register_once<llvm_common::register_passes, BarriersToLoopsPass, SubgroupsToLanesPass, ThreadFunctionsPass>();
}

}  // namespace quiver::compiler
