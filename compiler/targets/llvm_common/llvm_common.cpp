#include "targets/llvm_common/llvm_common.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "ir/layout.h"
#include "ir/math.h"
#include "targets/llvm_common/passes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace quiver::compiler::llvm_common {

namespace {

// Collects the messages of every diagnostic emitted while it lives.
class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext* context)
      : handler_(context, [this](mlir::Diagnostic& diag) {
          if (!text_.empty()) text_ += "; ";
          std::string loc;
          llvm::raw_string_ostream los(loc);
          diag.getLocation().print(los);
          text_ += diag.str() + " (at " + loc + ")";
          return mlir::success();
        }) {}
  std::string text() const { return text_.empty() ? "unknown error" : text_; }
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

void init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] {
    mlir::registerAllPasses();   // the textual pipelines name upstream conversion passes
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

}  // namespace

void prepare_context(mlir::MLIRContext& context) {
  init_once();
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::ub::UBDialect, mlir::vector::VectorDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

mlir::func::FuncOp find_kernel(mlir::ModuleOp module, std::string_view symbol,
                               const ErrorContext& where) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>(llvm::StringRef(symbol.data(), symbol.size()));
  if (!func) throw TargetError(where.kernel, where.target, "the IR has no function '" + std::string(symbol) + "'");
  if (!func->hasAttr("qv.kernel"))
    throw TargetError(where.kernel, where.target, "function '" + std::string(symbol) + "' lacks qv.kernel");
  if (func.isExternal())
    throw TargetError(where.kernel, where.target, "function '" + std::string(symbol) + "' has no body");
  return func;
}

std::array<uint32_t, 3> kernel_block(mlir::func::FuncOp func, const ErrorContext& where) {
  auto attr = func->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
  if (!attr || attr.size() != 3)
    throw TargetError(where.kernel, where.target, "qv.block must be array<i32: x, y, z>");
  std::array<uint32_t, 3> block{};
  for (int i = 0; i < 3; ++i) {
    if (attr[i] <= 0) throw TargetError(where.kernel, where.target, "qv.block has a non-positive size");
    block[i] = static_cast<uint32_t>(attr[i]);
  }
  return block;
}

std::array<uint32_t, 3> check_signature(mlir::func::FuncOp func, const format::Kernel& kernel,
                                        const ErrorContext& where) {
  std::array<uint32_t, 3> block = kernel_block(func, where);
  if (block != kernel.block)
    throw TargetError(where.kernel, where.target, "qv.block differs from the manifest block");
  mlir::FunctionType type = func.getFunctionType();
  if (type.getNumInputs() != kernel.params.size())
    throw TargetError(where.kernel, where.target, "the IR has " + std::to_string(type.getNumInputs()) +
                                                      " parameters, the manifest " +
                                                      std::to_string(kernel.params.size()));
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto memref = mlir::dyn_cast<mlir::MemRefType>(type.getInput(i));
    if (memref && (memref.getRank() != 1 || !memref.getLayout().isIdentity() || memref.getMemorySpace()))
      throw TargetError(where.kernel, where.target, "parameter '" + kernel.params[i].name + "' must be memref<?xT>");
    if ((memref != nullptr) != kernel.params[i].is_buffer)
      throw TargetError(where.kernel, where.target, "parameter '" + kernel.params[i].name +
                                                        "': the IR and the manifest disagree on buffer vs scalar");
  }
  return block;
}

void align_vector_accesses(mlir::Operation* op) {
  auto bytes = [](mlir::Type t) -> uint64_t {
    auto v = mlir::dyn_cast<mlir::VectorType>(t);
    if (!v || v.getRank() != 1) return 0;
    return v.getNumElements() * ((v.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  };
  op->walk([&](mlir::LLVM::LoadOp load) {
    if (uint64_t n = bytes(load.getType()); n && load.getAlignment().value_or(0) < n) load.setAlignment(n);
  });
  op->walk([&](mlir::LLVM::StoreOp store) {
    if (uint64_t n = bytes(store.getValue().getType()); n && store.getAlignment().value_or(0) < n) store.setAlignment(n);
  });
}

mlir::gpu::GPUFuncOp create_kernel_func(mlir::ModuleOp module, mlir::func::FuncOp func, const std::string& module_name,
                                        llvm::ArrayRef<mlir::Type> inputs, llvm::ArrayRef<mlir::Type> workgroup,
                                        const std::array<uint32_t, 3>& block) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto gpu_module = b.create<mlir::gpu::GPUModuleOp>(func.getLoc(), module_name);
  b.setInsertionPointToStart(gpu_module.getBody());
  auto gfunc = b.create<mlir::gpu::GPUFuncOp>(func.getLoc(), func.getSymName(),
                                              mlir::FunctionType::get(module.getContext(), inputs, {}), workgroup);
  gfunc->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  gfunc.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block[0]), static_cast<int32_t>(block[1]), static_cast<int32_t>(block[2])}));
  return gfunc;
}

quiver::ir::WorkgroupLayout workgroup_layout(mlir::func::FuncOp func, const format::Kernel& kernel,
                                             const ErrorContext& where) {
  quiver::ir::WorkgroupLayout layout;
  try {
    layout = quiver::ir::workgroup_layout(func);
  } catch (const std::exception& e) {
    throw TargetError(where.kernel, where.target, e.what());
  }
  if (layout.total_bytes > kernel.shared_bytes)
    throw TargetError(where.kernel, where.target, "needs " + std::to_string(layout.total_bytes) +
                                                      " bytes of workgroup memory, the manifest gives " +
                                                      std::to_string(kernel.shared_bytes));
  return layout;
}

std::string checked_kernel_list(mlir::ModuleOp module, std::span<const format::Kernel> kernels,
                                const std::string& target) {
  std::string symbols;
  for (const format::Kernel& kernel : kernels) {
    ErrorContext where{kernel.name, target};
    mlir::func::FuncOp func = find_kernel(module, kernel.symbol, where);
    check_signature(func, kernel, where);
    workgroup_layout(func, kernel, where);
    symbols += (symbols.empty() ? "" : ",") + kernel.symbol;
  }
  return symbols;
}

mlir::Value workgroup_view(mlir::OpBuilder& b, const quiver::ir::WorkgroupSlot& slot, mlir::Value bytes) {
  mlir::memref::AllocaOp alloca = slot.alloca;   // MLIR's op handles have no const accessors
  mlir::Value offset = b.create<mlir::arith::ConstantIndexOp>(alloca.getLoc(), slot.offset);
  return b.create<mlir::memref::ViewOp>(alloca.getLoc(), alloca.getType(), bytes, offset, mlir::ValueRange{});
}

void move_body_into(mlir::func::FuncOp func, mlir::gpu::GPUFuncOp gfunc, const quiver::ir::WorkgroupLayout& layout,
                    llvm::ArrayRef<mlir::Value> memory) {
  mlir::Block* entry = &gfunc.getBody().front();
  mlir::Block* old_entry = &func.getBody().front();
  for (unsigned i = 0; i < old_entry->getNumArguments(); ++i)
    old_entry->getArgument(i).replaceAllUsesWith(entry->getArgument(i));
  for (size_t j = 0; j < layout.slots.size(); ++j) {
    mlir::memref::AllocaOp alloca = layout.slots[j].alloca;
    alloca.getResult().replaceAllUsesWith(memory[j]);
    alloca.erase();
  }
  entry->getOperations().splice(entry->end(), old_entry->getOperations());
  gfunc.getBody().getBlocks().splice(gfunc.getBody().end(), func.getBody().getBlocks(),
                                     std::next(func.getBody().begin()), func.getBody().end());
  gfunc.walk([&](mlir::func::ReturnOp ret) {
    mlir::OpBuilder rb(ret);
    rb.create<mlir::gpu::ReturnOp>(ret.getLoc());
    ret.erase();
  });
  func.erase();
}

void move_kernel_module(mlir::gpu::GPUModuleOp gpu_module, mlir::ModuleOp module) {
  auto& ops = gpu_module.getBody()->getOperations();
  auto end = ops.end();
  if (!ops.empty() && ops.back().hasTrait<mlir::OpTrait::IsTerminator>()) --end;
  module.getBody()->getOperations().splice(module.getBody()->end(), ops, ops.begin(), end);
  gpu_module.erase();
}

void align_workgroup_globals(mlir::Operation* root) {
  root->walk([](mlir::LLVM::GlobalOp global) {
    if (global.getAddrSpace() != 3) return;
    // Sized arrays by ir::workgroup_alignment; the dynamic memory (a zero-length external
    // array) at the panel alignment, since ir::workgroup_layout's offsets count from it.
    uint64_t align = quiver::ir::kWorkgroupAlignment;
    if (auto array = mlir::dyn_cast<mlir::LLVM::LLVMArrayType>(global.getGlobalType())) {
      if (array.getNumElements() == 0) align = quiver::ir::kWorkgroupPanelAlignment;
      else if (array.getElementType().isIntOrFloat())
        align = quiver::ir::workgroup_alignment(array.getNumElements() *
                                                ((array.getElementType().getIntOrFloatBitWidth() + 7) / 8));
    }
    if (global.getAlignment().value_or(0) < align) global.setAlignment(align);
  });
}

namespace {

// "f32", "bf16", "v4f32": the overload suffix of an LLVM float intrinsic.
std::string type_suffix(mlir::Type type) {
  if (auto vec = mlir::dyn_cast<mlir::VectorType>(type))
    return "v" + std::to_string(vec.getNumElements()) + type_suffix(vec.getElementType());
  if (type.isBF16()) return "bf16";
  return "f" + std::to_string(type.getIntOrFloatBitWidth());
}

}  // namespace

void math_to_intrinsics(mlir::Operation* root) {
  std::vector<mlir::Operation*> ops;
  root->walk([&](mlir::Operation* op) {
    if (quiver::ir::is_exact_math_op(op)) ops.push_back(op);
  });
  for (mlir::Operation* op : ops) {
    const char* name = llvm::TypeSwitch<mlir::Operation*, const char*>(op)
                           .Case([](mlir::math::SqrtOp) { return "llvm.sqrt."; })
                           .Case([](mlir::math::FmaOp) { return "llvm.fma."; })
                           .Case([](mlir::math::AbsFOp) { return "llvm.fabs."; })
                           .Case([](mlir::math::FloorOp) { return "llvm.floor."; })
                           .Case([](mlir::math::CeilOp) { return "llvm.ceil."; })
                           .Case([](mlir::math::RoundEvenOp) { return "llvm.roundeven."; })
                           .Case([](mlir::math::TruncOp) { return "llvm.trunc."; })
                           .Case([](mlir::math::CopySignOp) { return "llvm.copysign."; })
                           .Default([](mlir::Operation*) { return nullptr; });
    if (!name) continue;
    mlir::OpBuilder b(op);
    mlir::Type type = op->getResult(0).getType();
    auto call = b.create<mlir::LLVM::CallIntrinsicOp>(op->getLoc(), type, name + type_suffix(type),
                                                      op->getOperands());
    op->getResult(0).replaceAllUsesWith(call.getResult(0));
    op->erase();
  }
}

void run_pipeline(mlir::Operation* op, std::string_view pipeline, const ErrorContext& where) {
  register_passes();
  DiagnosticCollector diags(op->getContext());
  mlir::PassManager pm(op->getContext(), op->getName().getStringRef());
  std::string parse_errors;
  llvm::raw_string_ostream err(parse_errors);
  if (mlir::failed(mlir::parsePassPipeline(llvm::StringRef(pipeline.data(), pipeline.size()), pm, err)))
    throw TargetError(where.kernel, where.target, "bad pass pipeline: " + parse_errors);
  if (mlir::failed(pm.run(op)))
    throw TargetError(where.kernel, where.target, "lowering failed: " + diags.text());
}

void verify(mlir::Operation* op, const ErrorContext& where) {
  DiagnosticCollector diags(op->getContext());
  if (mlir::failed(mlir::verify(op)))
    throw TargetError(where.kernel, where.target, "invalid IR after rewriting: " + diags.text());
}

std::unique_ptr<llvm::Module> translate(mlir::ModuleOp module, llvm::LLVMContext& llvm_context,
                                        const ErrorContext& where) {
  DiagnosticCollector diags(module.getContext());
  std::unique_ptr<llvm::Module> result = mlir::translateModuleToLLVMIR(module, llvm_context, "quiver");
  if (!result) throw TargetError(where.kernel, where.target, "translation to LLVM IR failed: " + diags.text());
  std::string broken;
  llvm::raw_string_ostream os(broken);
  if (llvm::verifyModule(*result, &os))
    throw TargetError(where.kernel, where.target, "invalid LLVM IR: " + broken);
  return result;
}

std::unique_ptr<llvm::TargetMachine> create_target_machine(const std::string& triple,
                                                           const std::string& cpu,
                                                           const std::string& features,
                                                           const ErrorContext& where) {
  init_once();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw TargetError(where.kernel, where.target, "LLVM has no target '" + triple + "': " + error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine) throw TargetError(where.kernel, where.target, "cannot create a target machine for " + triple);
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    throw TargetError(where.kernel, where.target, "LLVM does not know the processor '" + cpu + "' for " + triple);
  return machine;
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine, bool no_library_calls) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple().str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  llvm::TargetLibraryInfoImpl library_info(machine.getTargetTriple());
  if (no_library_calls) library_info.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(library_info); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
}

std::string emit(llvm::Module& module, llvm::TargetMachine& machine, llvm::CodeGenFileType kind,
                 const ErrorContext& where) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  llvm::TargetLibraryInfoImpl library_info(machine.getTargetTriple());
  pm.add(new llvm::TargetLibraryInfoWrapperPass(library_info));
  if (machine.addPassesToEmitFile(pm, os, nullptr, kind))
    throw TargetError(where.kernel, where.target, "LLVM cannot emit this file type for " +
                                                      machine.getTargetTriple().str());
  pm.run(module);
  return std::string(buffer.str());
}

void keep_temp(const TargetOptions& options, const std::string& name, std::string_view data) {
  if (options.keep_temps_dir.empty()) return;
  std::filesystem::create_directories(options.keep_temps_dir);
  std::ofstream out(std::filesystem::path(options.keep_temps_dir) / name, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string print(mlir::Operation* op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

std::string print(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

}  // namespace quiver::compiler::llvm_common
