#include "targets/cpu/cpu_entry.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Transforms/Utils/LowerAtomic.h"
#include "targets/llvm_common/process.h"

namespace quiver::compiler::cpu {

namespace {

// Byte offsets inside struct qv_cpu_ctx (docs/abi.md; runtime/backends/cpu/cpu_abi.h).
constexpr uint64_t kThreadIdOffset = 0;
constexpr uint64_t kBlockIdOffset = 12;
constexpr uint64_t kGridDimOffset = 36;
constexpr uint64_t kSharedOffset = 48;
constexpr uint64_t kSubgroupSizeOffset = 72;

// The CPU ABI these images are built for: runtime/backends/cpu/cpu_abi.h's kCpuAbiVersion
// (tests/kernels/validate_images.cpp checks they agree).
constexpr uint32_t kCpuAbiVersion = 2;

}  // namespace

void add_abi_version(llvm::Module& module) {
  llvm::Type* i32 = llvm::Type::getInt32Ty(module.getContext());
  auto* v = new llvm::GlobalVariable(module, i32, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                                     llvm::ConstantInt::get(i32, kCpuAbiVersion), "__qv_cpu_abi");
  v->setAlignment(llvm::Align(4));
}

void add_entry(llvm::Module& module, const ThreadFunction& fn, const llvm_common::ErrorContext& where) {
  llvm::Function* thread = module.getFunction(fn.thread_name);
  if (!thread) throw TargetError(where.kernel, where.target, "lost the thread function " + fn.thread_name);
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* i8 = llvm::Type::getInt8Ty(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr}, false);
  // A block-loop kernel without barriers (subgroups as lanes) keeps the plain name: one call
  // runs its block, as for every barrier-free kernel.
  const std::string name = fn.block_loops && fn.uses_barrier ? block_entry_name(fn.symbol) : fn.symbol;
  auto* entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Argument* args = entry->getArg(0);
  llvm::Argument* ctx_ptr = entry->getArg(1);
  args->setName("args");
  ctx_ptr->setName("ctx");

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::FunctionType* thread_type = thread->getFunctionType();
  llvm::Type* index = thread_type->getParamType(thread_type->getNumParams() - 1);
  std::vector<llvm::Value*> call_args;
  auto descriptor = [&](llvm::Value* base, uint64_t size) {
    call_args.push_back(base);
    call_args.push_back(base);
    call_args.push_back(llvm::ConstantInt::get(index, 0));
    call_args.push_back(llvm::ConstantInt::get(index, size));
    call_args.push_back(llvm::ConstantInt::get(index, 1));
  };
  for (size_t i = 0; i < fn.param_is_buffer.size(); ++i) {
    llvm::Value* slot = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, i), "arg" + std::to_string(i));
    if (fn.param_is_buffer[i]) {
      // The extent is not known here and nothing reads it: indices are unchecked, as on GPUs.
      descriptor(b.CreateLoad(ptr, slot), uint64_t{1} << 40);
    } else {
      size_t pos = call_args.size();
      if (pos >= thread_type->getNumParams())
        throw TargetError(where.kernel, where.target, "thread function has too few parameters");
      call_args.push_back(b.CreateAlignedLoad(thread_type->getParamType(pos), slot, llvm::Align(1)));
    }
  }
  descriptor(b.CreateLoad(ptr, b.CreateConstGEP1_64(i8, ctx_ptr, kSharedOffset), "shared"), fn.shared_bytes);
  call_args.push_back(ctx_ptr);
  auto ctx_field = [&](uint64_t offset, int k) {
    llvm::Value* v = b.CreateLoad(i32, b.CreateConstGEP1_64(i8, ctx_ptr, offset + 4 * k));
    return b.CreateZExt(v, index);
  };
  size_t thread_id_pos = call_args.size();
  for (int k = 0; k < 3; ++k) {
    call_args.push_back(fn.fibers()     ? ctx_field(kThreadIdOffset, k)
                        : fn.block_loops ? llvm::ConstantInt::get(index, 0)
                                         : nullptr);
  }
  for (int k = 0; k < 3; ++k) call_args.push_back(ctx_field(kBlockIdOffset, k));
  for (int k = 0; k < 3; ++k) call_args.push_back(ctx_field(kGridDimOffset, k));
  call_args.push_back(ctx_field(kSubgroupSizeOffset, 0));
  if (call_args.size() != thread_type->getNumParams())
    throw TargetError(where.kernel, where.target, "thread function signature mismatch: " +
                                                      std::to_string(thread_type->getNumParams()) +
                                                      " parameters, entry passes " +
                                                      std::to_string(call_args.size()));

  if (fn.fibers() || fn.block_loops) {
    b.CreateCall(thread, call_args);
    b.CreateRetVoid();
  } else {
    // for z, for y, for x (x fastest): constant trip counts from the manifest block, so the
    // inner loop can be vectorised after the thread function is inlined.
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", entry);
    std::array<llvm::PHINode*, 3> ids{};
    std::array<llvm::BasicBlock*, 3> headers{};
    for (int k = 2; k >= 0; --k) {
      headers[k] = llvm::BasicBlock::Create(ctx, std::string("loop_") + "xyz"[k], entry);
      b.CreateBr(headers[k]);
      b.SetInsertPoint(headers[k]);
      ids[k] = b.CreatePHI(index, 2, std::string("t") + "xyz"[k]);
      ids[k]->addIncoming(llvm::ConstantInt::get(index, 0), pre);
      pre = headers[k];
    }
    for (int k = 0; k < 3; ++k) call_args[thread_id_pos + k] = ids[k];
    b.CreateCall(thread, call_args);
    // Latches, innermost (x) first.
    std::array<llvm::BasicBlock*, 3> latches{};
    for (int k = 0; k < 3; ++k) latches[k] = llvm::BasicBlock::Create(ctx, std::string("next_") + "xyz"[k], entry);
    b.CreateBr(latches[0]);
    for (int k = 0; k < 3; ++k) {
      b.SetInsertPoint(latches[k]);
      llvm::Value* next = b.CreateAdd(ids[k], llvm::ConstantInt::get(index, 1), "", true, true);
      ids[k]->addIncoming(next, latches[k]);
      llvm::Value* more = b.CreateICmpULT(next, llvm::ConstantInt::get(index, fn.block[k]));
      llvm::BasicBlock* done = k < 2 ? latches[k + 1] : exit;
      b.CreateCondBr(more, headers[k], done);
    }
    b.SetInsertPoint(exit);
    b.CreateRetVoid();
  }
  thread->setLinkage(llvm::GlobalValue::InternalLinkage);
  thread->addFnAttr(llvm::Attribute::AlwaysInline);
  thread->addFnAttr(llvm::Attribute::NoUnwind);
}

void expand_float_atomics(llvm::Module& module) {
  std::vector<llvm::AtomicRMWInst*> float_rmws;
  for (llvm::Function& f : module)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& i : bb)
        if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&i); rmw && rmw->isFloatingPointOperation())
          float_rmws.push_back(rmw);
  for (llvm::AtomicRMWInst* rmw : float_rmws) {
    llvm::Type* value_type = rmw->getType();
    llvm::Type* bits_type = llvm::IntegerType::get(module.getContext(), value_type->getPrimitiveSizeInBits());
    llvm::Value* addr = rmw->getPointerOperand();
    // before: old = atomic load; loop: new = op(old); cmpxchg; again until it succeeds; done.
    llvm::BasicBlock* before = rmw->getParent();
    llvm::BasicBlock* done = before->splitBasicBlock(rmw, "atomic.done");
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(module.getContext(), "atomic.loop", before->getParent(), done);
    before->getTerminator()->eraseFromParent();
    llvm::IRBuilder<> b(before);
    llvm::LoadInst* first = b.CreateAlignedLoad(bits_type, addr, rmw->getAlign());
    first->setAtomic(llvm::AtomicOrdering::Monotonic, rmw->getSyncScopeID());
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* old_bits = b.CreatePHI(bits_type, 2);
    old_bits->addIncoming(first, before);
    llvm::Value* old_value = b.CreateBitCast(old_bits, value_type);
    llvm::Value* new_value = llvm::buildAtomicRMWValue(rmw->getOperation(), b, old_value, rmw->getValOperand());
    llvm::AtomicCmpXchgInst* swap = b.CreateAtomicCmpXchg(
        addr, old_bits, b.CreateBitCast(new_value, bits_type), rmw->getAlign(), rmw->getOrdering(),
        llvm::AtomicCmpXchgInst::getStrongestFailureOrdering(rmw->getOrdering()), rmw->getSyncScopeID());
    old_bits->addIncoming(b.CreateExtractValue(swap, 0), loop);
    b.CreateCondBr(b.CreateExtractValue(swap, 1), done, loop);
    rmw->replaceAllUsesWith(old_value);
    rmw->eraseFromParent();
  }
}

void check_undefined_symbols(const std::string& object, const llvm_common::ErrorContext& where) {
  // docs/abi.md: a CPU image may import libm only. llvm.fma etc. become these calls when the
  // baseline CPU lacks the instruction.
  static const std::set<std::string> allowed = {
      "fma", "fmaf", "floor", "floorf", "ceil", "ceilf", "trunc", "truncf", "roundeven",
      "roundevenf", "rint", "rintf", "nearbyint", "nearbyintf", "sqrt", "sqrtf", "fmin",
      "fminf", "fmax", "fmaxf", "copysign", "copysignf", "fabs", "fabsf"};
  auto buffer = llvm::MemoryBuffer::getMemBuffer(object, "kernels.o", false);
  auto file = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!file) {
    std::string msg = llvm::toString(file.takeError());
    throw TargetError(where.kernel, where.target, "cannot read back the object file: " + msg);
  }
  std::string bad;
  for (const llvm::object::SymbolRef& sym : (*file)->symbols()) {
    auto flags = sym.getFlags();
    if (!flags || !(*flags & llvm::object::SymbolRef::SF_Undefined)) {
      if (!flags) llvm::consumeError(flags.takeError());
      continue;
    }
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (name->empty() || allowed.count(name->str())) continue;
    bad += (bad.empty() ? "" : ", ") + name->str();
  }
  if (!bad.empty())
    throw TargetError(where.kernel, where.target, "the code needs symbols outside libm: " + bad);
}

std::vector<std::byte> link_shared_object(const std::string& object, const std::string& arch,
                                          const llvm_common::ErrorContext& where,
                                          const TargetOptions& options) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("QUIVER_LLVM_BIN")) dirs.push_back(env);
  dirs.push_back(QUIVER_LLVM_BIN_DIR);
  dirs.push_back("/usr/lib/llvm-19/bin");
  std::optional<std::filesystem::path> lld = llvm_common::find_executable("ld.lld", dirs);
  if (!lld) lld = llvm_common::find_executable("ld.lld-19", dirs);
  if (!lld)
    throw TargetError(where.kernel, where.target,
                      "ld.lld not found (looked in $QUIVER_LLVM_BIN, " QUIVER_LLVM_BIN_DIR ", PATH)");
  llvm_common::ScratchDir dir;
  auto in = dir.path() / "kernels.o";
  auto out = dir.path() / "kernels.so";
  llvm_common::write_file(in, object);
  std::vector<std::string> argv = {lld->string(), "-shared", "--eh-frame-hdr", "-z", "noexecstack",
                                   "-z", "relro", "-z", "now", "--hash-style=both",
                                   "-soname", "quiver-kernels-" + arch + ".so", "-o", out.string(),
                                   in.string()};
  llvm_common::ProcessResult r = llvm_common::run_process(argv);
  if (options.verbose && !r.output.empty()) fprintf(stderr, "%s", r.output.c_str());
  if (r.exit_code != 0)
    throw TargetError(where.kernel, where.target, "ld.lld failed: " + r.output);
  return llvm_common::read_file(out);
}

}  // namespace quiver::compiler::cpu
