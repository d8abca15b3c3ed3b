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

constexpr PassText kFoldBlockDims{
    "qv-fold-block-dims",
    "gpu.block_dim becomes the kernel's qv.block size; gpu.thread_id along an axis of size 1 becomes 0"};
constexpr PassText kPromotePrivateVariables{"qv-promote-private-variables",
                                            "mem2reg of each thread's own memref.alloca (never of workgroup arrays)"};
constexpr PassText kExpandDot4I8{"qv-expand-dot4-i8", "qv.dot4_i8 as exact byte-lane arithmetic"};
constexpr PassText kEraseAsyncCopyMarks{
    "qv-erase-async-copy-marks", "drops the qv.copy_async_commit / wait marks: the copies are already synchronous"};
constexpr PassText kEraseLaunchWaits{
    "qv-erase-launch-waits", "drops qv.wait_prior_launches: the target's launches never overlap"};
constexpr PassText kLowerMath{"qv-lower-math",
                              "the portable math lowering: only the exactly rounded math ops remain (ir/math.h)"};
using FoldBlockDimsPass = FunctionPass<kFoldBlockDims, fold_block_dims>;
using PromotePrivateVariablesPass = FunctionPass<kPromotePrivateVariables, promote_private_variables>;
using ExpandDot4I8Pass = FunctionPass<kExpandDot4I8, expand_dot4_i8>;
using EraseAsyncCopyMarksPass = FunctionPass<kEraseAsyncCopyMarks, erase_async_copy_marks>;
using EraseLaunchWaitsPass = FunctionPass<kEraseLaunchWaits, erase_launch_waits>;
using LowerMathPass = FunctionPass<kLowerMath, lower_math_or_say_so>;

// A tile expansion (matrix or block tiles) on every function but the kernels its `keep` option
// names, which keep their tiles for the target.
template <const PassText& text, void (*expand)(mlir::ModuleOp, llvm::function_ref<bool(mlir::func::FuncOp)>)>
class ExpandTilesPass : public RewritePass<ExpandTilesPass<text, expand>, text> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandTilesPass)
  ExpandTilesPass() = default;
  ExpandTilesPass(const ExpandTilesPass& other) : RewritePass<ExpandTilesPass, text>(other) {}
  typename RewritePass<ExpandTilesPass, text>::template ListOption<std::string> keep{
      *this, "keep", llvm::cl::desc("kernels whose tiles the target lowers itself")};
  void apply(mlir::ModuleOp module) {
    if (keep.empty()) return expand(module, nullptr);
    expand(module, [&](mlir::func::FuncOp fn) { return !llvm::is_contained(keep, fn.getSymName().str()); });
  }
};
constexpr PassText kExpandMatrix{"qv-expand-matrix",
                                 "the portable fallback of the qv.matrix_* intrinsics (every lane holds the whole tile)"};
constexpr PassText kExpandBlockTiles{
    "qv-expand-block-tiles", "the portable fallback of the qv.block_* intrinsics (each thread holds a share of the tile)"};
using ExpandMatrixPass = ExpandTilesPass<kExpandMatrix, expand_matrix_ops>;
using ExpandBlockTilesPass = ExpandTilesPass<kExpandBlockTiles, expand_block_ops>;

constexpr PassText kExpandWarpgroup{
    "qv-expand-warpgroup", "qv.warpgroup_store* element stores and (unless keep-mma) the portable warpgroup products"};
struct ExpandWarpgroupPass : RewritePass<ExpandWarpgroupPass, kExpandWarpgroup> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandWarpgroupPass)
  ExpandWarpgroupPass() = default;
  ExpandWarpgroupPass(const ExpandWarpgroupPass& other) : RewritePass(other) {}
  Option<bool> keep_mma{*this, "keep-mma", llvm::cl::desc("keep qv.warpgroup_mma / wait / store_swizzled for the target"),
                        llvm::cl::init(false)};
  void apply(mlir::ModuleOp module) { expand_warpgroup_ops(module, keep_mma); }
};

constexpr PassText kScalarizeVectors{"qv-scalarize-vectors", "no vector values: every vector op becomes scalar ops"};
struct ScalarizeVectorsPass : RewritePass<ScalarizeVectorsPass, kScalarizeVectors> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScalarizeVectorsPass)
  ScalarizeVectorsPass() = default;
  ScalarizeVectorsPass(const ScalarizeVectorsPass& other) : RewritePass(other) {}
  Option<bool> wide_buffer_access{*this, "wide-buffer-access",
                                  llvm::cl::desc("4-, 8- and 16-byte buffer accesses through 32-bit word views"),
                                  llvm::cl::init(false)};
  Option<bool> keep_tiles{*this, "keep-tiles", llvm::cl::desc("matrix and block tiles stay whole values"),
                          llvm::cl::init(false)};
  void apply(mlir::ModuleOp module) { scalarize_vectors(module, wide_buffer_access, keep_tiles); }
};

constexpr PassText kFloat16AsBits{"qv-16bit-floats-as-bits",
                                  "f16 / bf16 carried as i16, their conversions and arithmetic in integer and f32 ops"};
struct Float16AsBitsPass : RewritePass<Float16AsBitsPass, kFloat16AsBits> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Float16AsBitsPass)
  Float16AsBitsPass() = default;
  Float16AsBitsPass(const Float16AsBitsPass& other) : RewritePass(other) {}
  Option<bool> f16{*this, "f16", llvm::cl::desc("carry f16 as its bits"), llvm::cl::init(false)};
  Option<bool> bf16{*this, "bf16", llvm::cl::desc("carry bf16 as its bits"), llvm::cl::init(false)};
  void apply(mlir::ModuleOp module) { carry_16bit_floats_as_bits(module, f16, bf16); }
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
                  ExpandWarpgroupPass, ExpandDot4I8Pass, EraseAsyncCopyMarksPass, EraseLaunchWaitsPass, ScalarizeVectorsPass,
                  Float16AsBitsPass, LowerMathPass>();
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
