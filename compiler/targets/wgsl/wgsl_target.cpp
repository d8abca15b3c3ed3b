// The WGSL target: neutral IR → legalised, structured IR (vectors as scalars, f16/bf16 as
// bits, quiver's own math) → one WGSL module per kernel (wgsl_emitter.h) → one text image
// (docs/abi.md "WGSL"). Kernels using subgroup operations get a second module computing with
// subgroups of one invocation, for devices without WebGPU's `subgroups` feature.
#include <cstring>
#include <fstream>

#include "ir/legalize.h"
#include "ir/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include "targets/target.h"
#include "targets/wgsl/wgsl_emitter.h"

namespace quiver::compiler {
namespace {

using wgsl::kTargetName;
constexpr const char* kArch = "webgpu";
constexpr const char* kImageHeader = "// quiver WGSL image v1\n";

std::string all_kernels(std::span<const format::Kernel> kernels) {
  std::string names;
  for (const format::Kernel& k : kernels) names += (names.empty() ? "" : ", ") + k.symbol;
  return names;
}

std::vector<mlir::func::FuncOp> kernel_functions(mlir::ModuleOp module, std::span<const format::Kernel> kernels) {
  std::vector<mlir::func::FuncOp> funcs;
  for (const format::Kernel& kernel : kernels) {
    auto func = module.lookupSymbol<mlir::func::FuncOp>(kernel.symbol);
    if (!func || func.isExternal() || !func->hasAttr("qv.kernel"))
      throw TargetError(kernel.symbol, kTargetName, "no kernel function '" + kernel.symbol + "' in the IR");
    if (func.getNumArguments() != kernel.params.size())
      throw TargetError(kernel.symbol, kTargetName,
                        "the IR has " + std::to_string(func.getNumArguments()) + " parameters but the manifest lists " +
                            std::to_string(kernel.params.size()));
    funcs.push_back(func);
  }
  return funcs;
}

const char* binding_kind(wgsl::Binding::Kind kind) {
  switch (kind) {
    case wgsl::Binding::Kind::ReadOnlyStorage: return "read";
    case wgsl::Binding::Kind::Storage: return "read_write";
    case wgsl::Binding::Kind::Uniform: return "uniform";
  }
  return "?";
}

// The line that opens one module in the image (docs/abi.md "WGSL").
std::string unit_line(const format::Kernel& kernel, const wgsl::KernelModule& m) {
  std::string bindings;
  for (const wgsl::Binding& b : m.bindings)
    bindings += (bindings.empty() ? "" : ",") + std::to_string(b.index) + ":" + binding_kind(b.kind);
  return "//@qv-kernel " + kernel.symbol + " entry=" + m.entry + " features=" +
         (m.needs_subgroups ? "subgroups" : "none") + " bindings=" + (bindings.empty() ? "-" : bindings) + "\n";
}

class WgslTarget final : public Target {
 public:
  std::string_view name() const override { return kTargetName; }

  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    for (const std::string& arch : options.archs)
      if (arch != kArch)
        throw TargetError(all_kernels(kernels), kTargetName,
                          "unknown arch '" + arch + "' (the wgsl target builds '" + kArch + "')");
    if (kernels.empty()) return {};
    mlir::MLIRContext* ctx = module.getContext();
    ctx->loadDialect<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                     mlir::gpu::GPUDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                     mlir::scf::SCFDialect, mlir::ub::UBDialect, mlir::vector::VectorDialect>();
    auto log = [&](const std::string& what) {
      if (options.verbose) llvm::errs() << "wgsl: " << what << "\n";
    };

    std::vector<mlir::func::FuncOp> funcs = kernel_functions(module, kernels);
    for (size_t i = 0; i < funcs.size(); ++i) wgsl::check_types(funcs[i], kernels[i]);
    // WGSL vectors stop at 4 elements and WebGPU's f16 is an optional feature (bf16 does not
    // exist): vectors become scalars and both 16-bit floats travel as bits with exact integer
    // conversions. dot4_i8 stays a call: it becomes dot4I8Packed.
    log("legalising and lowering math");
    ir::LegalizeOptions legal;
    legal.scalarize_vectors = true;
    legal.f16_as_bits = true;
    legal.bf16_as_bits = true;
    legal.expand_dot4_i8 = false;
    const std::string pipeline = ir::legalize_pipeline(legal) + ",qv-lower-math";
    print_pipeline(options, kTargetName, "builtin.module", pipeline);
    if (std::string error; !ir::run_pipeline(module, pipeline, error))
      throw TargetError(all_kernels(kernels), kTargetName, error);
    funcs = kernel_functions(module, kernels);

    std::string text = kImageHeader;
    for (size_t i = 0; i < funcs.size(); ++i) {
      log("emitting " + kernels[i].symbol);
      std::vector<wgsl::KernelModule> units;
      units.push_back(wgsl::emit_kernel(funcs[i], kernels[i], /*native_subgroups=*/true));
      if (wgsl::uses_subgroups(funcs[i])) units.push_back(wgsl::emit_kernel(funcs[i], kernels[i], false));
      for (const wgsl::KernelModule& unit : units) {
        text += unit_line(kernels[i], unit) + unit.source;
        if (!options.keep_temps_dir.empty()) {
          std::string path = options.keep_temps_dir + "/" + kernels[i].symbol +
                             (unit.needs_subgroups ? ".subgroups" : "") + ".wgsl";
          std::ofstream(path) << unit.source;
        }
      }
    }

    TargetImage image;
    image.target = format::Target::WGSL;
    image.arch = kArch;
    image.data.resize(text.size());
    std::memcpy(image.data.data(), text.data(), text.size());
    for (const format::Kernel& k : kernels) image.kernels.push_back(k.symbol);
    std::vector<TargetImage> images;
    images.push_back(std::move(image));
    return images;
  }
};

}  // namespace

std::unique_ptr<Target> create_wgsl_target() { return std::make_unique<WgslTarget>(); }

// The wgsl target's pipeline is the neutral IR's passes only: the rest is its emitter.
void register_wgsl_passes() { ir::register_passes(); }

}  // namespace quiver::compiler
