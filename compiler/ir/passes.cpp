#include "ir/passes.h"

#include <mutex>

#include "ir/block_tiles.h"
#include "ir/intrinsics.h"
#include "ir/legalize.h"
#include "ir/math.h"
#include "ir/matrix.h"
#include "ir/normalize.h"
#include "ir/warpgroup.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace quiver::ir {

namespace {

void lower_math_or_say_so(mlir::ModuleOp module) {
  try {
    lower_math(module);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("math lowering: ") + e.what());
  }
}

}  // namespace

#define GEN_PASS_DECL
#define GEN_PASS_DEF_FOLDBLOCKDIMS
#define GEN_PASS_DEF_PROMOTEPRIVATEVARIABLES
#define GEN_PASS_DEF_EXPANDMATRIX
#define GEN_PASS_DEF_EXPANDBLOCKTILES
#define GEN_PASS_DEF_EXPANDWARPGROUP
#define GEN_PASS_DEF_EXPANDDOT4I8
#define GEN_PASS_DEF_ERASEASYNCCOPYMARKS
#define GEN_PASS_DEF_ERASELAUNCHWAITS
#define GEN_PASS_DEF_SCALARIZEVECTORS
#define GEN_PASS_DEF_FLOAT16ASBITS
#define GEN_PASS_DEF_LOWERMATH
#include "ir/Passes.h.inc"

namespace {

using FoldBlockDimsPass = RewritePass<impl::FoldBlockDimsBase, fold_block_dims>;
using PromotePrivateVariablesPass = RewritePass<impl::PromotePrivateVariablesBase, promote_private_variables>;
using ExpandDot4I8Pass = RewritePass<impl::ExpandDot4I8Base, expand_dot4_i8>;
using EraseAsyncCopyMarksPass = RewritePass<impl::EraseAsyncCopyMarksBase, erase_async_copy_marks>;
using EraseLaunchWaitsPass = RewritePass<impl::EraseLaunchWaitsBase, erase_launch_waits>;
using LowerMathPass = RewritePass<impl::LowerMathBase, lower_math_or_say_so>;

// A tile expansion (matrix or block tiles) on every function but the kernels `keep` names,
// which keep their tiles for the target.
template <template <typename> class Generated,
          void (*expand)(mlir::ModuleOp, llvm::function_ref<bool(mlir::func::FuncOp)>)>
class ExpandTilesPass : public Rewriting<Generated<ExpandTilesPass<Generated, expand>>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandTilesPass)
  using Rewriting<Generated<ExpandTilesPass>>::Rewriting;
  void runOnOperation() override {
    this->rewrite([this](mlir::ModuleOp module) {
      if (this->keep.empty()) return expand(module, nullptr);
      expand(module, [&](mlir::func::FuncOp fn) { return !llvm::is_contained(this->keep, fn.getSymName().str()); });
    });
  }
};
using ExpandMatrixPass = ExpandTilesPass<impl::ExpandMatrixBase, expand_matrix_ops>;
using ExpandBlockTilesPass = ExpandTilesPass<impl::ExpandBlockTilesBase, expand_block_ops>;

struct ExpandWarpgroupPass : Rewriting<impl::ExpandWarpgroupBase<ExpandWarpgroupPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { expand_warpgroup_ops(m, keep_mma); });
  }
};
struct ScalarizeVectorsPass : Rewriting<impl::ScalarizeVectorsBase<ScalarizeVectorsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { scalarize_vectors(m, wide_buffer_access, keep_tiles); });
  }
};
struct Float16AsBitsPass : Rewriting<impl::Float16AsBitsBase<Float16AsBitsPass>> {
  using Rewriting::Rewriting;
  void runOnOperation() override {
    rewrite([&](mlir::ModuleOp m) { carry_16bit_floats_as_bits(m, f16, bf16); });
  }
};

std::string flag(const char* name, bool value) { return std::string(name) + (value ? "=true" : "=false"); }

// Turns the pipeline `text` into its registration's pass list.
mlir::LogicalResult add_pipeline(mlir::OpPassManager& pm, llvm::StringRef text) {
  return mlir::parsePassPipeline(text, pm, llvm::errs());
}

}  // namespace

void register_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerCanonicalizerPass();
    mlir::registerCSEPass();
    mlir::registerLiftControlFlowToSCFPass();
    register_pass<FoldBlockDimsPass, PromotePrivateVariablesPass, ExpandMatrixPass, ExpandBlockTilesPass,
                  ExpandWarpgroupPass, ExpandDot4I8Pass, EraseAsyncCopyMarksPass, EraseLaunchWaitsPass,
                  ScalarizeVectorsPass, Float16AsBitsPass, LowerMathPass>();
    mlir::PassPipelineRegistration<>("qv-normalize", "the front end's normalisation (" + normalize_pipeline() + ")",
                                     [](mlir::OpPassManager& pm) { (void)add_pipeline(pm, normalize_pipeline()); });
    mlir::PassPipelineRegistration<>("qv-structure", "control flow lifted to scf (" + structure_pipeline() + ")",
                                     [](mlir::OpPassManager& pm) { (void)add_pipeline(pm, structure_pipeline()); });
  });
}

std::string normalize_pipeline() {
  // Unreachable blocks (code after break/return) go first, so mem2reg sees a clean CFG.
  return "qv-fold-block-dims,canonicalize,qv-promote-private-variables,canonicalize";
}

std::string structure_pipeline() {
  // Block dimensions folded again: target rewrites (ir/warpgroup.cpp) may read the block shape.
  return "qv-fold-block-dims,canonicalize,lift-cf-to-scf,canonicalize,cse";
}

std::string legalize_pipeline(const LegalizeOptions& options) {
  std::string pipeline;
  auto add = [&](const std::string& pass) { pipeline += (pipeline.empty() ? "" : ",") + pass; };
  if (options.expand_matrix) add("qv-expand-matrix");
  if (options.expand_block_tiles) add("qv-expand-block-tiles");
  add(options.keep_warpgroup_mma ? "qv-expand-warpgroup{keep-mma=true}" : "qv-expand-warpgroup");
  if (options.expand_dot4_i8) add("qv-expand-dot4-i8");
  if (!options.keep_async_copies) add("qv-erase-async-copy-marks");
  if (!options.keep_launch_waits) add("qv-erase-launch-waits");
  if (options.scalarize_vectors)
    add("qv-scalarize-vectors{" + flag("wide-buffer-access", options.wide_buffer_access) + " " +
        flag("keep-tiles", !options.expand_matrix) + "}");
  if (options.f16_as_bits || options.bf16_as_bits)
    add("qv-16bit-floats-as-bits{" + flag("f16", options.f16_as_bits) + " " + flag("bf16", options.bf16_as_bits) + "}");
  add(structure_pipeline());
  return pipeline;
}

llvm::SmallVector<mlir::func::FuncOp> named_kernels(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  llvm::SmallVector<mlir::func::FuncOp> kernels;
  for (const std::string& symbol : symbols) {
    auto func = module.lookupSymbol<mlir::func::FuncOp>(symbol);
    if (!func || func.isExternal() || !func->hasAttr("qv.kernel"))
      throw std::runtime_error("no kernel '" + symbol + "' (func.func with qv.kernel and a body) in the module");
    kernels.push_back(func);
  }
  return kernels;
}

bool run_pipeline(mlir::Operation* op, llvm::StringRef pipeline, std::string& error) {
  register_passes();
  mlir::PassManager pm(op->getContext(), op->getName().getStringRef());
  std::string parse_errors;
  llvm::raw_string_ostream err(parse_errors);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, err))) {
    error = "bad pass pipeline '" + pipeline.str() + "': " + parse_errors;
    return false;
  }
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(op->getContext(), [&](mlir::Diagnostic& d) {
    messages += (messages.empty() ? "" : "; ") + d.str();
    return mlir::success();
  });
  if (mlir::succeeded(pm.run(op))) return true;
  error = messages.empty() ? "a pass of '" + pipeline.str() + "' failed" : messages;
  return false;
}

}  // namespace quiver::ir
