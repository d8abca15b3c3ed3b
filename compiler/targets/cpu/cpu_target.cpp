// CPU target: neutral IR -> per-thread function (gpu ids as arguments, workgroup memory inside
// qv_cpu_ctx::shared) -> LLVM dialect -> LLVM IR + exported entries (cpu_entry.cpp) -> O3 ->
// ELF object for the host (or the arch asked for) -> ld.lld -shared -> Target::CPU image.
//
// CPU baseline: x86-64-v2 (every x86-64 CPU since ~2009) / aarch64 generic; fma becomes a call
// of libm's fma/fmaf where the baseline lacks the instruction, so results stay identical to
// the GPU targets (glibc picks the hardware instruction when the CPU has it).
#include <cstdio>

#include "ir/layout.h"
#include "ir/passes.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "targets/cpu/barrier_fission.h"
#include "targets/cpu/cpu_entry.h"
#include "targets/cpu/subgroup_lanes.h"
#include "targets/llvm_common/llvm_common.h"
#include "targets/llvm_common/passes.h"

namespace quiver::compiler {

void register_cpu_passes();

namespace {

using llvm_common::ErrorContext;
using cpu::ThreadFunction;

constexpr const char* kTargetName = "cpu";
constexpr uint64_t kBarrierOffset = 56;   // qv_cpu_ctx::barrier
// Each kernel's per-thread function (a module of its own), to the LLVM dialect.
constexpr const char* kThreadPipeline =
    "convert-scf-to-cf,convert-vector-to-llvm,convert-math-to-llvm,"
    "convert-arith-to-llvm,finalize-memref-to-llvm,convert-ub-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,reconcile-unrealized-casts";

struct ArchInfo {
  std::string triple;
  std::string cpu;
};

// x86_64_v3 (AVX2, FMA) and x86_64_v4 (AVX-512) are the same code for wider vectors: the runtime
// loads the best one the CPU runs (docs/abi.md "CPU"), x86_64 being the fallback every set has.
ArchInfo arch_info(const std::string& arch, const ErrorContext& where) {
  if (arch == "x86_64") return {"x86_64-unknown-linux-gnu", "x86-64-v2"};
  if (arch == "x86_64_v3") return {"x86_64-unknown-linux-gnu", "x86-64-v3"};
  if (arch == "x86_64_v4") return {"x86_64-unknown-linux-gnu", "x86-64-v4"};
  if (arch == "aarch64") return {"aarch64-unknown-linux-gnu", "generic"};
  throw TargetError(where.kernel, where.target,
                    "unsupported CPU arch '" + arch + "' (x86_64, x86_64_v3, x86_64_v4, aarch64)");
}

std::vector<std::string> host_archs() {
  llvm::Triple host(llvm::sys::getProcessTriple());
  if (host.getArch() == llvm::Triple::aarch64) return {"aarch64"};
  return {"x86_64", "x86_64_v3", "x86_64_v4"};
}

// Turns kernel `func` into its per-thread function inside a new module (returned), lowered to
// the LLVM dialect. See ThreadFunction for the parameter order.
mlir::OwningOpRef<mlir::ModuleOp> make_thread_function(mlir::func::FuncOp func,
                                                       const format::Kernel& kernel,
                                                       ThreadFunction& info,
                                                       const ErrorContext& where,
                                                       const TargetOptions& options) {
  mlir::MLIRContext* ctx = func.getContext();
  std::array<uint32_t, 3> block = llvm_common::check_signature(func, kernel, where);
  mlir::FunctionType type = func.getFunctionType();
  info.symbol = kernel.symbol;
  info.thread_name = "__qv_thread_" + kernel.symbol;
  info.block = block;
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    info.param_is_buffer.push_back(mlir::isa<mlir::MemRefType>(type.getInput(i)));
  }
  info.shared_bytes = kernel.shared_bytes;
  bool has_barrier = false;
  func.walk([&](mlir::gpu::BarrierOp) { has_barrier = true; });
  if (has_barrier && !kernel.uses_barrier)
    throw TargetError(where.kernel, where.target, "uses gpu.barrier but the manifest says uses_barrier = false");
  info.uses_barrier = kernel.uses_barrier;

  // A kernel with barriers or subgroup operations in structured control flow runs its block as
  // loops over the threads (one call per block), its subgroups as lanes of those loops; the
  // others keep one fiber per thread (barriers) and subgroups of one thread.
  const bool has_subgroups = cpu::has_subgroup_operations(func);
  bool lanes = !has_subgroups;   // whether gpu.subgroup_size is the runtime's width
  if (has_barrier || has_subgroups) {
    std::string why_not;
    info.block_loops = cpu::block_to_thread_loops(func, block, lanes, why_not);
    if (!has_subgroups) lanes = info.block_loops;
    if (options.verbose && !info.block_loops && has_barrier)
      fprintf(stderr, "quiverc: cpu: %s keeps fibers: %s\n", kernel.name.c_str(), why_not.c_str());
    else if (options.verbose && has_subgroups && !lanes)
      fprintf(stderr, "quiverc: cpu: %s keeps subgroups of one thread: %s\n", kernel.name.c_str(), why_not.c_str());
  }

  quiver::ir::WorkgroupLayout layout = llvm_common::workgroup_layout(func, kernel, where);

  // New parameters: shared memory, ctx, then thread_id, block_id, grid_dim (xyz each), the
  // subgroup size.
  mlir::OpBuilder b(ctx);
  mlir::Type index = b.getIndexType();
  auto ptr = mlir::LLVM::LLVMPointerType::get(ctx);
  auto bytes = mlir::MemRefType::get({mlir::ShapedType::kDynamic}, b.getI8Type());
  llvm::SmallVector<mlir::Type> inputs(type.getInputs());
  inputs.push_back(bytes);
  inputs.push_back(ptr);
  inputs.append(cpu::kCtxIds, index);
  mlir::Block& entry = func.getBody().front();
  mlir::Location loc = func.getLoc();
  mlir::Value shared = entry.addArgument(bytes, loc);
  mlir::Value ctx_arg = entry.addArgument(ptr, loc);
  std::array<mlir::Value, cpu::kCtxIds> ids;
  for (auto& v : ids) v = entry.addArgument(index, loc);
  func.setFunctionType(mlir::FunctionType::get(ctx, inputs, {}));
  func.setName(info.thread_name);
  func->removeAttr("qv.kernel");

  b.setInsertionPointToStart(&entry);
  for (auto& slot : layout.slots) {
    mlir::MemRefType t = slot.alloca.getType();
    auto plain = mlir::MemRefType::get(t.getShape(), t.getElementType());
    mlir::Value offset = b.create<mlir::arith::ConstantIndexOp>(loc, slot.offset);
    mlir::Value view = b.create<mlir::memref::ViewOp>(slot.alloca.getLoc(), plain, shared, offset, mlir::ValueRange{});
    slot.alloca.getResult().replaceAllUsesWith(view);
    slot.alloca.erase();
  }

  std::string unsupported;
  func.walk([&](mlir::Operation* op) {
    if (!op->getDialect() || op->getDialect()->getNamespace() != "gpu") return;
    mlir::OpBuilder ob(op);
    mlir::Location l = op->getLoc();
    auto dim_index = [](mlir::gpu::Dimension d) { return static_cast<unsigned>(d); };
    mlir::Value replacement;
    if (auto o = mlir::dyn_cast<mlir::gpu::ThreadIdOp>(op)) {
      replacement = ids[0 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::BlockIdOp>(op)) {
      replacement = ids[3 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::GridDimOp>(op)) {
      replacement = ids[6 + dim_index(o.getDimension())];
    } else if (auto o = mlir::dyn_cast<mlir::gpu::BlockDimOp>(op)) {
      replacement = ob.create<mlir::arith::ConstantIndexOp>(l, block[dim_index(o.getDimension())]);
    } else if (mlir::isa<mlir::gpu::SubgroupSizeOp>(op)) {
      // The runtime's width (qv_cpu_ctx::subgroup_size), or 1 where the subgroup operations
      // below are a single thread's (docs/abi.md "CPU").
      replacement = lanes ? ids[9] : ob.create<mlir::arith::ConstantIndexOp>(l, 1).getResult();
    } else if (mlir::isa<mlir::gpu::LaneIdOp>(op)) {
      replacement = ob.create<mlir::arith::ConstantIndexOp>(l, 0);
    } else if (auto o = mlir::dyn_cast<mlir::gpu::SubgroupReduceOp>(op)) {
      replacement = o.getValue();   // a reduction over one lane is its value
    } else if (auto o = mlir::dyn_cast<mlir::gpu::ShuffleOp>(op)) {
      // One lane: the only valid source is lane 0, reached exactly when the offset is 0 in
      // every mode (xor, down, up, idx); the value is then this lane's own.
      mlir::Value zero = ob.create<mlir::arith::ConstantIntOp>(l, 0, o.getOffset().getType());
      mlir::Value valid = ob.create<mlir::arith::CmpIOp>(l, mlir::arith::CmpIPredicate::eq, o.getOffset(), zero);
      o.getShuffleResult().replaceAllUsesWith(o.getValue());
      o.getValid().replaceAllUsesWith(valid);
      op->erase();
      return;
    } else if (mlir::isa<mlir::gpu::BarrierOp>(op)) {
      // ctx->barrier(ctx)
      mlir::Value slot = ob.create<mlir::LLVM::GEPOp>(l, ptr, ob.getI8Type(), ctx_arg,
                                                      llvm::ArrayRef<mlir::LLVM::GEPArg>{static_cast<int32_t>(kBarrierOffset)});
      mlir::Value fn = ob.create<mlir::LLVM::LoadOp>(l, ptr, slot);
      auto fn_type = mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(ctx), {ptr});
      ob.create<mlir::LLVM::CallOp>(l, fn_type, mlir::ValueRange{fn, ctx_arg});
      op->erase();
      return;
    } else {
      if (unsupported.empty()) unsupported = op->getName().getStringRef().str();
      return;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  });
  if (!unsupported.empty())
    throw TargetError(where.kernel, where.target, "'" + unsupported + "' is not supported on the CPU");

  mlir::OwningOpRef<mlir::ModuleOp> sub = mlir::ModuleOp::create(loc);
  func->moveBefore(sub->getBody(), sub->getBody()->end());
  llvm_common::verify(*sub, where);
  llvm_common::keep_temp(options, "cpu." + kernel.symbol + ".thread.mlir", llvm_common::print(*sub));
  llvm_common::run_pipeline(*sub, kThreadPipeline, where);
  llvm_common::keep_temp(options, "cpu." + kernel.symbol + ".llvm.mlir", llvm_common::print(*sub));
  return sub;
}

class CpuTarget final : public Target {
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
    ErrorContext all{all_names, kTargetName};
    std::vector<std::string> archs = options.archs;
    if (archs.empty()) archs = host_archs();
    for (const std::string& arch : archs) arch_info(arch, all);

    llvm_common::prepare_context(*module.getContext());
    register_cpu_passes();
    // No compiler-rt at the x86-64-v2 baseline: 16-bit float conversions as integer arithmetic.
    quiver::ir::LegalizeOptions legal;
    legal.f16_as_bits = legal.bf16_as_bits = true;
    llvm_common::run_passes(module, quiver::ir::legalize_pipeline(legal) + ",qv-lower-math", all, options);
    std::vector<mlir::func::FuncOp> funcs;
    for (const format::Kernel& k : kernels)
      funcs.push_back(llvm_common::find_kernel(module, k.symbol, {k.name, kTargetName}));
    print_pipeline(options, kTargetName, "builtin.module", kThreadPipeline);

    mlir::OwningOpRef<mlir::ModuleOp> llvm_module = mlir::ModuleOp::create(module.getLoc());
    std::vector<ThreadFunction> threads(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
      ErrorContext where{kernels[i].name, kTargetName};
      mlir::OwningOpRef<mlir::ModuleOp> sub = make_thread_function(funcs[i], kernels[i], threads[i], where, options);
      llvm_module->getBody()->getOperations().splice(llvm_module->getBody()->end(),
                                                     sub->getBody()->getOperations());
    }
    llvm_common::keep_temp(options, "cpu.llvm.mlir", llvm_common::print(*llvm_module));
    llvm::LLVMContext llvm_context;
    llvm_common::run_passes(*llvm_module, "qv-align-vector-accesses", all, options);
    std::unique_ptr<llvm::Module> base = llvm_common::translate(*llvm_module, llvm_context, all);

    std::vector<TargetImage> images;
    for (const std::string& arch : archs) {
      ArchInfo info = arch_info(arch, all);
      std::unique_ptr<llvm::Module> m = llvm::CloneModule(*base);
      auto machine = llvm_common::create_target_machine(info.triple, info.cpu, "", all);
      m->setDataLayout(machine->createDataLayout());
      for (size_t i = 0; i < kernels.size(); ++i)
        cpu::add_entry(*m, threads[i], {kernels[i].name, kTargetName});
      cpu::add_abi_version(*m);
      cpu::expand_float_atomics(*m);
      llvm_common::optimize(*m, *machine, /*no_library_calls=*/true);
      llvm_common::keep_temp(options, "cpu." + arch + ".ll", llvm_common::print(*m));
      std::string object = llvm_common::emit(*m, *machine, llvm::CodeGenFileType::ObjectFile, all);
      cpu::check_undefined_symbols(object, all);
      TargetImage image{format::Target::CPU, arch, cpu::link_shared_object(object, arch, all, options), symbols};
      llvm_common::keep_temp(options, "kernels." + arch + ".so",
                             std::string_view(reinterpret_cast<const char*>(image.data.data()), image.data.size()));
      images.push_back(std::move(image));
    }
    return images;
  }
};

}  // namespace

std::unique_ptr<Target> create_cpu_target() { return std::make_unique<CpuTarget>(); }

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
}  // namespace

// The cpu target's pipelines name upstream passes, those of the LLVM-based targets and its own.
void register_cpu_passes() {
  ir::register_once<BarriersToLoopsPass, SubgroupsToLanesPass>(llvm_common::register_passes);
}

}  // namespace quiver::compiler
