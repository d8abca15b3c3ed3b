// MSL target (Apple GPUs through Metal): each kernel lowered to Vulkan 1.2 SPIR-V by the spirv
// target (one module per kernel), translated with SPIRV-Cross into Metal Shading
// Language, packed as one MSL image (format in runtime/backends/metal/msl_image.h, ABI in
// docs/abi.md "MSL / metallib"); plus a metallib image when Apple's tools exist on the build
// machine.
//
// Going through SPIR-V keeps one lowering for both (subgroups, atomics, 16-bit types and the
// math of the SPIR-V path), so Metal computes what Vulkan computes.
#include "ir/dialect/QvDialect.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "targets/llvm_common/process.h"
#include "targets/msl/metallib.h"
#include "targets/msl/spirv_to_msl.h"
#include "targets/target.h"

namespace quiver::compiler {

namespace {

constexpr const char* kTargetName = "msl";

std::string arch_name() { return "msl" + std::to_string(msl::kMslMajor) + "." + std::to_string(msl::kMslMinor); }

void keep_temp(const TargetOptions& options, const std::string& name, std::string_view data) {
  if (options.keep_temps_dir.empty()) return;
  llvm_common::write_file(std::filesystem::path(options.keep_temps_dir) / name, data);
}

std::string_view as_bytes(const std::vector<uint32_t>& words) {
  return {reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint32_t)};
}

class MslTarget final : public Target {
 public:
  std::string_view name() const override { return kTargetName; }

  std::vector<TargetImage> compile(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                   const TargetOptions& options) override {
    std::string all_names;
    std::vector<std::string> symbols;
    for (const format::Kernel& k : kernels) {
      all_names += (all_names.empty() ? "" : ", ") + k.name;
      symbols.push_back(k.symbol);
    }
    for (const std::string& arch : options.archs)
      if (arch != arch_name())
        throw TargetError(all_names, kTargetName, "unknown arch '" + arch + "' (the msl target builds " + arch_name() + ")");
    if (kernels.empty()) return {};

    // SPIRV-Cross writes a device-scope OpMemoryBarrier as threadgroup_barrier(mem_device), a
    // barrier of the whole threadgroup (invalid where not every thread reaches it) and no fence
    // beyond the threadgroup: qv::device_fence has no MSL form here.
    module.walk([&](quiver::ir::qv::DeviceFenceOp op) {
      auto fn = op->getParentOfType<mlir::func::FuncOp>();
      std::string kernel = all_names;
      for (const format::Kernel& k : kernels)
        if (fn && fn.getSymName() == k.symbol) kernel = k.name;
      std::string at;
      if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
        at = " (at " + file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
             std::to_string(file.getColumn()) + ")";
      throw TargetError(kernel, kTargetName,
                        "qv::device_fence has no MSL form (SPIRV-Cross writes it as a threadgroup barrier); limit "
                        "the kernel with QV_TARGETS" + at);
    });

    // Per-kernel SPIR-V: a kernel SPIR-V cannot express fails here (MSL inherits its limits:
    // no double, no 64-bit atomics).
    std::vector<std::vector<uint32_t>> modules;
    try {
      modules = msl::spirv_per_kernel(module, kernels, options.verbose);
    } catch (const TargetError& e) {
      if (e.target() == kTargetName) throw;
      throw TargetError(e.kernel(), kTargetName, std::string("the SPIR-V it is translated from fails: ") + e.what());
    }

    msl_image::Image image;
    image.msl_major = msl::kMslMajor;
    image.msl_minor = msl::kMslMinor;
    for (const format::Kernel& kernel : kernels) {
      if (options.verbose) llvm::errs() << "msl: translating " << kernel.symbol << "\n";
      try {
        const std::vector<uint32_t>& words = modules[&kernel - kernels.data()];
        keep_temp(options, kernel.symbol + ".spv", as_bytes(words));
        image.kernels.push_back(msl::translate_kernel(words, kernel));
      } catch (const std::runtime_error& e) {
        throw TargetError(kernel.name, kTargetName, e.what());
      }
    }
    std::string text = msl_image::write(image);
    // The runtime's reader must accept what we write; a failure here is a quiverc bug.
    msl_image::Image check;
    if (std::string error; !msl_image::parse(text, check, error))
      throw TargetError(all_names, kTargetName, "the MSL image does not read back: " + error);
    keep_temp(options, "kernels.msl", text);

    std::vector<TargetImage> images;
    TargetImage msl{format::Target::MSL, arch_name(), {}, symbols};
    const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
    msl.data.assign(bytes, bytes + text.size());
    images.push_back(std::move(msl));

    if (std::optional<std::string> xcrun = msl::find_apple_metal_tools()) {
      TargetImage lib{format::Target::METALLIB, arch_name(), msl::build_metallib(*xcrun, image, all_names, options),
                      symbols};
      images.push_back(std::move(lib));
    } else if (options.verbose) {
      llvm::errs() << "msl: no metallib (Apple's xcrun metal / metallib are not on this machine)\n";
    }
    return images;
  }
};

}  // namespace

std::unique_ptr<Target> create_msl_target() { return std::make_unique<MslTarget>(); }

// The msl target lowers through the spirv target's pipeline.
void register_spirv_passes();
void register_msl_passes() { register_spirv_passes(); }

}  // namespace quiver::compiler
