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

struct FoldBlockDimsPass : RewritePass<FoldBlockDimsPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FoldBlockDimsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-fold-block-dims";
  static constexpr llvm::StringLiteral kDescription =
      "gpu.block_dim becomes the kernel's qv.block size; gpu.thread_id along an axis of size 1 becomes 0";
  void rewrite(mlir::ModuleOp module) { fold_block_dims(module); }
};

struct PromotePrivateVariablesPass : RewritePass<PromotePrivateVariablesPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PromotePrivateVariablesPass)
  static constexpr llvm::StringLiteral kArgument = "qv-promote-private-variables";
  static constexpr llvm::StringLiteral kDescription =
      "mem2reg of each thread's own memref.alloca (never of workgroup arrays)";
  void rewrite(mlir::ModuleOp module) { promote_private_variables(module); }
};

// Runs `expand` on every function but the kernels `keep` (a pass option) names, which keep
// their tiles for the target.
template <typename Expand>
void expand_all_but(mlir::ModuleOp module, const std::vector<std::string>& keep, Expand expand) {
  if (keep.empty()) return expand(module, nullptr);
  expand(module, [&](mlir::func::FuncOp fn) { return !llvm::is_contained(keep, fn.getSymName().str()); });
}

struct ExpandMatrixPass : RewritePass<ExpandMatrixPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandMatrixPass)
  static constexpr llvm::StringLiteral kArgument = "qv-expand-matrix";
  static constexpr llvm::StringLiteral kDescription =
      "the portable fallback of the qv.matrix_* intrinsics (every lane holds the whole tile)";
  ExpandMatrixPass() = default;
  ExpandMatrixPass(const ExpandMatrixPass& other) : RewritePass(other) {}
  ListOption<std::string> keep{*this, "keep", llvm::cl::desc("kernels whose tiles the target lowers itself")};
  void rewrite(mlir::ModuleOp module) { expand_all_but(module, keep, expand_matrix_ops); }
};

struct ExpandBlockTilesPass : RewritePass<ExpandBlockTilesPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandBlockTilesPass)
  static constexpr llvm::StringLiteral kArgument = "qv-expand-block-tiles";
  static constexpr llvm::StringLiteral kDescription =
      "the portable fallback of the qv.block_* intrinsics (each thread holds a share of the tile)";
  ExpandBlockTilesPass() = default;
  ExpandBlockTilesPass(const ExpandBlockTilesPass& other) : RewritePass(other) {}
  ListOption<std::string> keep{*this, "keep", llvm::cl::desc("kernels whose block tiles the target lowers itself")};
  void rewrite(mlir::ModuleOp module) { expand_all_but(module, keep, expand_block_ops); }
};

struct ExpandWarpgroupPass : RewritePass<ExpandWarpgroupPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandWarpgroupPass)
  static constexpr llvm::StringLiteral kArgument = "qv-expand-warpgroup";
  static constexpr llvm::StringLiteral kDescription =
      "qv.warpgroup_store* element stores and (unless keep-mma) the portable warpgroup products";
  ExpandWarpgroupPass() = default;
  ExpandWarpgroupPass(const ExpandWarpgroupPass& other) : RewritePass(other) {}
  Option<bool> keep_mma{*this, "keep-mma", llvm::cl::desc("keep qv.warpgroup_mma / wait / store_swizzled for the target"),
                        llvm::cl::init(false)};
  void rewrite(mlir::ModuleOp module) { expand_warpgroup_ops(module, keep_mma); }
};

struct ExpandDot4I8Pass : RewritePass<ExpandDot4I8Pass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandDot4I8Pass)
  static constexpr llvm::StringLiteral kArgument = "qv-expand-dot4-i8";
  static constexpr llvm::StringLiteral kDescription = "qv.dot4_i8 as exact byte-lane arithmetic";
  void rewrite(mlir::ModuleOp module) { expand_dot4_i8(module); }
};

struct EraseAsyncCopyMarksPass : RewritePass<EraseAsyncCopyMarksPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EraseAsyncCopyMarksPass)
  static constexpr llvm::StringLiteral kArgument = "qv-erase-async-copy-marks";
  static constexpr llvm::StringLiteral kDescription =
      "drops the qv.copy_async_commit / wait calls: the copies are already synchronous";
  void rewrite(mlir::ModuleOp module) { erase_async_copy_marks(module); }
};

struct ScalarizeVectorsPass : RewritePass<ScalarizeVectorsPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScalarizeVectorsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-scalarize-vectors";
  static constexpr llvm::StringLiteral kDescription = "no vector values: every vector op becomes scalar ops";
  ScalarizeVectorsPass() = default;
  ScalarizeVectorsPass(const ScalarizeVectorsPass& other) : RewritePass(other) {}
  Option<bool> wide_buffer_access{*this, "wide-buffer-access",
                                  llvm::cl::desc("4-, 8- and 16-byte buffer accesses through 32-bit word views"),
                                  llvm::cl::init(false)};
  Option<bool> keep_tiles{*this, "keep-tiles", llvm::cl::desc("matrix and block tiles stay whole values"),
                          llvm::cl::init(false)};
  void rewrite(mlir::ModuleOp module) { scalarize_vectors(module, wide_buffer_access, keep_tiles); }
};

struct Float16AsBitsPass : RewritePass<Float16AsBitsPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Float16AsBitsPass)
  static constexpr llvm::StringLiteral kArgument = "qv-16bit-floats-as-bits";
  static constexpr llvm::StringLiteral kDescription =
      "f16 / bf16 carried as i16, their conversions and arithmetic in integer and f32 ops";
  Float16AsBitsPass() = default;
  Float16AsBitsPass(const Float16AsBitsPass& other) : RewritePass(other) {}
  Option<bool> f16{*this, "f16", llvm::cl::desc("carry f16 as its bits"), llvm::cl::init(false)};
  Option<bool> bf16{*this, "bf16", llvm::cl::desc("carry bf16 as its bits"), llvm::cl::init(false)};
  void rewrite(mlir::ModuleOp module) { carry_16bit_floats_as_bits(module, f16, bf16); }
};

struct LowerMathPass : RewritePass<LowerMathPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerMathPass)
  static constexpr llvm::StringLiteral kArgument = "qv-lower-math";
  static constexpr llvm::StringLiteral kDescription =
      "the portable math lowering: only the exactly rounded math ops remain (ir/math.h)";
  void rewrite(mlir::ModuleOp module) {
    try {
      lower_math(module);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("math lowering: ") + e.what());
    }
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
    register_pass<FoldBlockDimsPass>();
    register_pass<PromotePrivateVariablesPass>();
    register_pass<ExpandMatrixPass>();
    register_pass<ExpandBlockTilesPass>();
    register_pass<ExpandWarpgroupPass>();
    register_pass<ExpandDot4I8Pass>();
    register_pass<EraseAsyncCopyMarksPass>();
    register_pass<ScalarizeVectorsPass>();
    register_pass<Float16AsBitsPass>();
    register_pass<LowerMathPass>();
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
  if (options.scalarize_vectors)
    add("qv-scalarize-vectors{" + flag("wide-buffer-access", options.wide_buffer_access) + " " +
        flag("keep-tiles", !options.expand_matrix) + "}");
  if (options.f16_as_bits || options.bf16_as_bits)
    add("qv-16bit-floats-as-bits{" + flag("f16", options.f16_as_bits) + " " + flag("bf16", options.bf16_as_bits) + "}");
  add(structure_pipeline());
  return pipeline;
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
