// The SPIR-V target: neutral IR → one Vulkan compute module per kernel, its OpEntryPoint named by
// the kernel's manifest symbol (docs/abi.md "SPIR-V"). Legalisation and math lowering run once on
// the whole module; each kernel is then lowered to a spirv.module of its own, so a failure names
// the kernel, and becomes an image of its own that must pass spirv-val. One kernel per image
// because drivers process a whole SPIR-V module for every pipeline they create from it (NVIDIA's
// and lavapipe's both: docs/format.md "SPIR-V images"): a program launching one kernel of a
// 68-kernel library should not pay for the other 67.
#include <cstring>
#include <fstream>
#include <set>

#include "ir/block_tiles.h"
#include "ir/legalize.h"
#include "ir/passes.h"
#include "ir/matrix.h"
#include "ir/math.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include "targets/spirv/exp2_glsl.h"
#include "targets/spirv/lower.h"
#include "targets/spirv/integer_dot.h"
#include "targets/spirv/matrix_coop.h"
#include "targets/spirv/specialize.h"
#include "targets/spirv/top_tested_loops.h"
#include "targets/spirv/matrix_coop_lanes.h"
#include "targets/spirv/prepare.h"
#include "targets/spirv/validate.h"
#include "targets/target.h"

namespace quiver::compiler {

void register_spirv_passes();   // passes.cpp

namespace {

using spirv_target::kTargetName;
constexpr const char* kArch = "vulkan1.2";
constexpr const char* kCoopArch = "vulkan1.3_coopmat";

// " {option=a,b}" naming `fns`, or nothing when there are none: a pass option.
std::string kernel_list(const char* option, llvm::ArrayRef<mlir::func::FuncOp> fns) {
  std::string names;
  for (mlir::func::FuncOp fn : fns) names += (names.empty() ? "" : ",") + fn.getSymName().str();
  return names.empty() ? "" : std::string("{") + option + "=" + names + "}";
}

std::string all_kernels(std::span<const format::Kernel> kernels) {
  std::string names;
  for (const format::Kernel& k : kernels) names += (names.empty() ? "" : ", ") + k.symbol;
  return names;
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(size));
  if (!out) throw TargetError("*", kTargetName, "cannot write temporary file " + path);
}

template <typename Op>
void write_mlir(const std::string& path, Op op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  write_file(path, text.data(), text.size());
}

class SpirvTarget final : public Target {
 public:
  // word_views: buffers also viewed as 16-byte words (wide accesses). glsl_exp2: f32 exp2 as
  // GLSL.std.450 Exp2 (Vulkan); the MSL target keeps the portable polynomial, whose error
  // docs/numerics.md states for every target.
  // specialize: QV_SPECIALIZE parameters as specialization constants (specialize.h; Vulkan).
  SpirvTarget(bool word_views, bool glsl_exp2, bool cooperative_matrix_arch, bool specialize)
      : word_views_(word_views), glsl_exp2_(glsl_exp2), cooperative_matrix_arch_(cooperative_matrix_arch),
        specialize_(specialize) {}
  std::string_view name() const override { return kTargetName; }

  // The portable images, and where the module has matrix tiles, images whose tiles are
  // cooperative matrices (matrix_coop.h); the runtime loads, kernel by kernel, the best image the
  // device supports.
  std::vector<std::string> default_archs() const override {
    if (!cooperative_matrix_arch_) return {kArch};
    return {kArch, kCoopArch};
  }

  // The portable and the cooperative-matrix images share no lowering work (each legalises its own
  // copy): one group each, so quiverc -j builds them side by side. Unknown archs: one group, for
  // compile() to report.
  std::vector<std::vector<std::string>> arch_groups(const mlir::ModuleOp&, std::span<const format::Kernel>,
                                                    const std::vector<std::string>& archs) const override {
    for (const std::string& arch : archs)
      if (arch != kArch && arch != kCoopArch) return {archs};
    std::vector<std::vector<std::string>> groups;
    for (const std::string& arch : archs) groups.push_back({arch});
    return groups;
  }

  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    std::vector<std::string> archs = options.archs.empty() ? std::vector<std::string>{kArch} : options.archs;
    for (const std::string& arch : archs)
      if (arch != kArch && !(cooperative_matrix_arch_ && arch == kCoopArch))
        throw TargetError(all_kernels(kernels), kTargetName,
                          "unknown arch '" + arch + "' (the spirv target builds " + kArch +
                              (cooperative_matrix_arch_ ? std::string(" and ") + kCoopArch : std::string()) + ")");
    if (kernels.empty()) return {};
    std::vector<TargetImage> images;
    for (size_t i = 0; i < archs.size(); ++i) {
      // Legalisation rewrites the module: every arch but the last gets a copy.
      mlir::OwningOpRef<mlir::ModuleOp> copy;
      if (i + 1 < archs.size()) copy = module.clone();
      mlir::ModuleOp m = copy ? *copy : module;
      std::vector<TargetImage> arch_images = compile_arch(m, kernels, options, archs[i] == kCoopArch);
      for (TargetImage& image : arch_images) images.push_back(std::move(image));
    }
    return images;
  }

 private:
  // One image per kernel, in `kernels` order: portable, or (`coop`) with the kernels that
  // coop_lowerable takes on cooperative matrices; none when `coop` and no kernel has tiles it
  // takes. Each image requires what its own kernel needs, no more: a kernel without tiles in the
  // cooperative-matrix arch requires no cooperative-matrix configuration.
  std::vector<TargetImage> compile_arch(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                        const TargetOptions& options, bool coop) {
    mlir::MLIRContext* ctx = module.getContext();
    // The image's arch names its kept files: both images of one build share the directory.
    const std::string image_arch = coop ? kCoopArch : kArch;
    ctx->loadDialect<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                     mlir::func::FuncDialect, mlir::gpu::GPUDialect, mlir::index::IndexDialect,
                     mlir::math::MathDialect, mlir::memref::MemRefDialect,
                     mlir::scf::SCFDialect, mlir::spirv::SPIRVDialect, mlir::ub::UBDialect,
                     mlir::vector::VectorDialect>();
    auto log = [&](const std::string& what) {
      if (options.verbose) llvm::errs() << "spirv: " << what << "\n";
    };
    register_spirv_passes();

    std::vector<mlir::func::FuncOp> funcs = spirv_target::find_kernel_functions(module, kernels);
    for (size_t i = 0; i < funcs.size(); ++i) spirv_target::check_kernel_types(funcs[i], kernels[i]);
    std::vector<std::vector<unsigned>> specialized;
    for (mlir::func::FuncOp fn : funcs)
      specialized.push_back(specialize_ ? spirv_target::specialized_parameters(fn) : std::vector<unsigned>{});
    // Per kernel: the device features its image requires.
    std::vector<std::vector<std::string>> requirements(kernels.size());
    std::string pipeline;   // what the cooperative-matrix image needs first, then legalisation
    if (coop) {
      // Which kernels the image takes on cooperative matrices, and which of those through lane
      // shares for the accumulator math the extension lacks (matrix_coop_lanes.h): an analysis
      // whose answers are the passes' options.
      llvm::SmallVector<mlir::func::FuncOp> on_matrices, on_lanes;
      for (size_t i = 0; i < funcs.size(); ++i) {
        std::string why, lanes_why;
        if (spirv_target::coop_lowerable(funcs[i], why)) {
          on_matrices.push_back(funcs[i]);
        } else if (spirv_target::lanes_applicable(funcs[i], lanes_why)) {
          log(kernels[i].symbol + " runs accumulator math on lane shares (" + why + ")");
          on_matrices.push_back(funcs[i]);
          on_lanes.push_back(funcs[i]);
          // The image will require 32-invocation subgroups: the kernel may count on them.
          requirements[i].push_back(spirv_target::kShareSubgroupRequirement);
        } else {
          log(kernels[i].symbol + " keeps the portable tiles in " + kCoopArch + ": " + why);
        }
      }
      if (!on_lanes.empty()) {
        const std::string lanes = "qv-spirv-accumulator-math-to-lanes" + kernel_list("kernels", on_lanes);
        print_pipeline(options, kTargetName, "builtin.module", lanes);
        if (std::string error; !ir::run_pipeline(module, lanes, error))
          throw TargetError(all_kernels(kernels), kTargetName, error);
      }
      for (size_t i = 0; i < funcs.size(); ++i)
        if (llvm::is_contained(on_matrices, funcs[i])) {
          std::vector<std::string> coop_needs = spirv_target::cooperative_matrix_requirements({funcs[i]});
          requirements[i].insert(requirements[i].begin(), coop_needs.begin(), coop_needs.end());
        }
      // Block tiles: workgroup-scope cooperative products where every operation has that form.
      llvm::SmallVector<mlir::func::FuncOp> on_blocks;
      for (size_t i = 0; i < funcs.size(); ++i) {
        std::string why;
        if (spirv_target::block_coop_lowerable(funcs[i], why)) {
          on_blocks.push_back(funcs[i]);
          for (std::string& r : spirv_target::block_coop_requirements({funcs[i]}))
            if (!llvm::is_contained(requirements[i], r)) requirements[i].push_back(std::move(r));
        } else if (why != "it uses no block tiles") {
          log(kernels[i].symbol + " keeps the portable block tiles in " + kCoopArch + ": " + why);
        }
      }
      if (on_matrices.empty() && on_blocks.empty()) return {};
      pipeline = "qv-expand-block-tiles" + kernel_list("keep", on_blocks) + ",qv-expand-matrix" +
                 kernel_list("keep", on_matrices) + ",qv-spirv-mark-right-operands" +
                 kernel_list("kernels", on_matrices) + ",";
    }
    // SPIR-V compute vectors stop at 4 elements and SPIR-V has no bfloat16: vectors become
    // scalars, bf16 travels as its bits (docs/ir.md). f16 too: NVIDIA's Vulkan driver folds
    // float(half(x)) back to x (seen on the H100, driver 580), which the kernel language's
    // explicit rounding forbids; integer conversions cannot be folded away.
    log("legalising and lowering math");
    ir::LegalizeOptions legal;
    legal.scalarize_vectors = true;
    legal.wide_buffer_access = word_views_;
    legal.bf16_as_bits = true;
    legal.f16_as_bits = true;
    legal.expand_matrix = !coop;
    legal.expand_block_tiles = !coop;
    // The Vulkan 1.3 image takes qv::dot4_i8 as OpSDot (integer_dot.h); the portable one computes
    // it byte by byte.
    const bool integer_dot = coop && spirv_target::uses_dot4_i8(module);
    legal.expand_dot4_i8 = !integer_dot;
    pipeline += ir::legalize_pipeline(legal) + (glsl_exp2_ ? ",qv-spirv-exp2-to-glsl-stand-in" : "") +
                ",qv-lower-math,qv-spirv-structure-control-flow,qv-spirv-top-tested-loops,"
                "qv-spirv-exact-signed-remainder";
    print_pipeline(options, kTargetName, "builtin.module", pipeline);
    if (std::string error; !ir::run_pipeline(module, pipeline, error))
      throw TargetError(all_kernels(kernels), kTargetName, error);
    // The IR agrees with the manifest (parameters, block) before the kernels leave their func.func.
    funcs = spirv_target::find_kernel_functions(module, kernels);
    const std::string wrap = "qv-spirv-wrap-kernels" + kernel_list("kernels", funcs);
    print_pipeline(options, kTargetName, "builtin.module", wrap);
    if (std::string error; !ir::run_pipeline(module, wrap, error))
      throw TargetError(all_kernels(kernels), kTargetName, error);

    std::vector<TargetImage> images;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const format::Kernel& kernel = kernels[i];
      const std::string convert = "qv-spirv-convert-kernels{kernels=" + kernel.symbol +
                                  (coop ? " cooperative-matrix=true}" : "}");
      print_pipeline(options, kTargetName, "builtin.module", convert);
      if (std::string error; !ir::run_pipeline(module, convert, error))
        throw TargetError(kernel.symbol, kTargetName, "lowering to SPIR-V failed:\n" + error);
      auto spv = module.lookupSymbol<mlir::spirv::ModuleOp>("__spv__" + spirv_target::kernel_module_name(kernel.symbol));
      if (!spv) throw TargetError(kernel.symbol, kTargetName, "internal: the conversion left no spirv.module");
      // The kernel's module made whole on its own: ABI lowered, what the manifest says of its
      // parameters (which it only reads, which are QV_SPECIALIZE), minimal version, capabilities
      // and extensions, entry point interfaces, memory model.
      std::string read_only, spec;
      for (uint32_t p = 0; p < kernel.params.size(); ++p)
        if (kernel.params[p].access == format::Access::Read) read_only += (read_only.empty() ? "" : ",") + std::to_string(p);
      for (unsigned p : specialized[i]) spec += (spec.empty() ? "" : ",") + std::to_string(p);
      std::string steps = "spirv-lower-abi-attrs,qv-spirv-alias-shared-bindings";
      if (!read_only.empty()) steps += ",qv-spirv-read-only-bindings{bindings=" + read_only + "}";
      if (!spec.empty()) steps += ",qv-spirv-specialize-parameters{kernel=" + kernel.symbol + " parameters=" + spec + "}";
      steps += ",spirv-update-vce,qv-spirv-subgroup-builtin-capability,qv-spirv-list-interfaces,qv-spirv-vulkan-memory-model";
      print_pipeline(options, kTargetName, "spirv.module", steps);
      if (std::string error; !ir::run_pipeline(spv, steps, error)) throw TargetError(kernel.symbol, kTargetName, error);
      images.push_back(kernel_image(spv, kernel, image_arch, std::move(requirements[i]), options, coop));
    }
    return images;
  }

  // Serializes (and for the portable arch validates) one kernel's module into its image.
  TargetImage kernel_image(mlir::spirv::ModuleOp spv, const format::Kernel& kernel, const std::string& image_arch,
                           std::vector<std::string> requirements, const TargetOptions& options, bool coop) {
    // Kept files: one pair per kernel and arch (both archs of one build share the directory).
    const std::string temp = options.keep_temps_dir + "/spirv." + image_arch + "." + kernel.symbol;
    if (!options.keep_temps_dir.empty()) write_mlir(temp + ".mlir", spv);

    std::string error;
    std::vector<uint32_t> words;
    if (!spirv_target::serialize_module(spv, words, error)) throw TargetError(kernel.symbol, kTargetName, error);
    if (glsl_exp2_) {
      size_t stand_ins = 0;
      spv.walk([&](mlir::spirv::GLExpOp) { ++stand_ins; });
      size_t retagged = spirv_target::retag_exp_as_exp2(words);
      if (retagged != stand_ins)
        throw TargetError(kernel.symbol, kTargetName,
                          "internal: " + std::to_string(stand_ins) + " GL.Exp stand-ins for exp2, " +
                              std::to_string(retagged) + " retagged to Exp2 in the binary");
    }
    if (!options.keep_temps_dir.empty()) write_file(temp + ".spv", words.data(), words.size() * 4);

    // SPIRV-Tools as Debian 12 ships it (2023.1) predates SPV_KHR_cooperative_matrix and rejects
    // its instructions as unknown: the cooperative-matrix images are checked by the SPIR-V
    // dialect's verifier (types, uses, operands of every cooperative-matrix op) and by the
    // driver that loads them (docs/targets.md).
    if (!coop) {
      std::string invalid = spirv_target::validate_vulkan12(words);
      if (!invalid.empty())
        throw TargetError(kernel.symbol, kTargetName, "spirv-val rejected the generated module:\n" + invalid);
    }

    TargetImage image;
    image.target = format::Target::SPIRV;
    image.arch = image_arch;
    image.requirements = std::move(requirements);
    // OpSDot (the Vulkan 1.3 arch's qv::dot4_i8) needs the device's integer dot product.
    bool integer_dot = false;
    spv.walk([&](mlir::spirv::SDotOp) { integer_dot = true; });
    if (integer_dot) image.requirements.push_back(spirv_target::kIntegerDotRequirement);
    image.data.resize(words.size() * sizeof(uint32_t));
    std::memcpy(image.data.data(), words.data(), image.data.size());
    image.kernels = {kernel.symbol};
    return image;
  }

  bool word_views_;
  bool glsl_exp2_;
  bool cooperative_matrix_arch_;
  bool specialize_;
};

}  // namespace

std::unique_ptr<Target> create_spirv_target() { return std::make_unique<SpirvTarget>(true, true, true, true); }

// For the MSL target: one SPIR-V variable per binding (Metal takes one buffer per [[buffer(i)]]),
// so no word views of buffers; vector accesses are element by element.
std::unique_ptr<Target> create_spirv_target_one_variable_per_binding() {
  return std::make_unique<SpirvTarget>(false, false, false, false);
}

}  // namespace quiver::compiler
