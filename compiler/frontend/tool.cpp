// Runs Clang LibTooling over the kernel sources, finds QV_KERNEL functions and explicit
// instantiations of kernel templates, and emits each through FunctionEmitter.
#include "frontend/frontend.h"
#include "frontend/emitter.h"
#include "frontend/types.h"
#include "ir/layout.h"
#include "ir/normalize.h"
#include "ir/warpgroup.h"

#include <optional>
#include <set>

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/Attr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ThreadPool.h"
#include "mlir/IR/Builders.h"

namespace quiver::frontend {
namespace {

const clang::AnnotateAttr* find_annotation(const clang::Decl* d, llvm::StringRef what) {
  for (const auto* a : d->specific_attrs<clang::AnnotateAttr>())
    if (a->getAnnotation() == what) return a;
  return nullptr;
}

class KernelFinder : public clang::RecursiveASTVisitor<KernelFinder> {
 public:
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool VisitFunctionDecl(clang::FunctionDecl* fd) {
    if (!find_annotation(fd, "qv.kernel") || fd->isTemplateInstantiation()) return true;
    if (auto* tmpl = fd->getDescribedFunctionTemplate()) {
      templates.push_back(tmpl);
      return true;
    }
    if (fd->isThisDeclarationADefinition()) kernels.push_back(fd);
    else declared.push_back(fd);
    return true;
  }
  std::vector<const clang::FunctionDecl*> kernels;
  std::vector<const clang::FunctionDecl*> declared;
  std::vector<clang::FunctionTemplateDecl*> templates;
};

class Consumer : public clang::ASTConsumer {
 public:
  Consumer(clang::CompilerInstance& ci, mlir::ModuleOp module, Result& result, std::set<std::string>& symbols,
           const std::vector<std::string>& targets)
      : ci_(ci), module_(module), result_(result), symbols_(symbols), targets_(targets) {}

  void HandleTranslationUnit(clang::ASTContext& ast) override {
    auto& diags = ci_.getDiagnostics();
    auto& sm = ast.getSourceManager();
    for (auto it = sm.fileinfo_begin(); it != sm.fileinfo_end(); ++it)
      result_.dependencies.push_back(it->first.getName().str());
    if (auto buf = sm.getBufferDataOrNone(sm.getMainFileID())) result_.source_text += buf->str();
    if (diags.hasErrorOccurred()) return;

    KernelFinder finder;
    finder.TraverseDecl(ast.getTranslationUnitDecl());
    std::vector<const clang::FunctionDecl*> kernels = finder.kernels;
    for (clang::FunctionTemplateDecl* tmpl : finder.templates) {
      bool any = false;
      for (clang::FunctionDecl* spec : tmpl->specializations()) {
        auto tsk = spec->getTemplateSpecializationKind();
        if (tsk != clang::TSK_ExplicitInstantiationDefinition && tsk != clang::TSK_ExplicitSpecialization) continue;
        const clang::FunctionDecl* def = nullptr;
        if (spec->hasBody(def)) kernels.push_back(def), any = true;
      }
      if (!any) {
        unsigned id = diags.getCustomDiagID(clang::DiagnosticsEngine::Warning,
                                            "kernel template '%0' has no explicit instantiation; nothing is compiled for it");
        diags.Report(tmpl->getLocation(), id) << tmpl->getName();
      }
    }
    for (const clang::FunctionDecl* fd : finder.declared) {
      const clang::FunctionDecl* def = nullptr;
      if (!fd->hasBody(def)) {
        unsigned id = diags.getCustomDiagID(clang::DiagnosticsEngine::Error, "QV_KERNEL '%0' is declared but never defined");
        diags.Report(fd->getLocation(), id) << fd->getName();
      }
    }
    for (const clang::FunctionDecl* fd : kernels) emit(ast, fd);
  }

 private:
  void emit(clang::ASTContext& ast, const clang::FunctionDecl* fd) {
    auto& diags = ci_.getDiagnostics();
    auto report = [&](clang::SourceLocation where, const std::string& msg) {
      diags.Report(where, diags.getCustomDiagID(clang::DiagnosticsEngine::Error, "%0")) << msg;
    };
    KernelEntry entry;
    format::Kernel& k = entry.manifest;
    k.name = canonical_kernel_name(fd);
    for (const KernelEntry& other : result_.kernels)
      if (other.manifest.name == k.name) return report(fd->getLocation(), "kernel '" + k.name + "' is defined twice");

    if (const auto* block = find_annotation(fd, "qv.block")) {
      if (block->args_size() < 1 || block->args_size() > 3)
        return report(block->getLocation(), "QV_BLOCK takes 1 to 3 sizes");
      k.block = {1, 1, 1};
      unsigned i = 0;
      for (const clang::Expr* a : block->args()) {
        auto v = a->getIntegerConstantExpr(ast);
        if (!v || v->isNegative() || v->getZExtValue() == 0 || v->getZExtValue() > 1024)
          return report(a->getBeginLoc(), "QV_BLOCK sizes must be constants between 1 and 1024");
        k.block[i++] = static_cast<uint32_t>(v->getZExtValue());
      }
      if (uint64_t(k.block[0]) * k.block[1] * k.block[2] > 1024)
        return report(block->getLocation(), "QV_BLOCK has more than 1024 threads in total");
    }
    uint32_t min_blocks = 0;
    if (const auto* mb = find_annotation(fd, "qv.min_blocks")) {
      auto v = mb->args_size() == 1 ? (*mb->args_begin())->getIntegerConstantExpr(ast) : std::nullopt;
      if (!v || v->isNegative() || v->getZExtValue() == 0 || v->getZExtValue() > 32)
        return report(mb->getLocation(), "QV_MIN_BLOCKS takes one constant between 1 and 32");
      min_blocks = static_cast<uint32_t>(v->getZExtValue());
    }
    if (const auto* targets = find_annotation(fd, "qv.targets")) {
      const auto* lit = targets->args_size() == 1
                            ? llvm::dyn_cast<clang::StringLiteral>((*targets->args_begin())->IgnoreParenImpCasts())
                            : nullptr;
      if (!lit) return report(targets->getLocation(), "QV_TARGETS takes a list of target names");
      llvm::SmallVector<llvm::StringRef> parts;
      lit->getString().split(parts, ',', -1, false);
      for (llvm::StringRef p : parts) {
        p = p.trim();
        auto [target, arch] = p.split(':');   // "ptx" or "ptx:sm_90a": only that arch's images
        target = target.trim();
        arch = arch.trim();
        if (!llvm::is_contained(targets_, target) || (p.contains(':') && arch.empty())) {
          std::string known;
          for (const std::string& t : targets_) known += t + ", ";
          return report(targets->getLocation(), "unknown target '" + p.str() + "' in QV_TARGETS (known: " + known +
                                                    "each optionally with one arch: ptx:sm_90a)");
        }
        entry.allowed_targets.push_back(p.contains(':') ? (target + ":" + arch).str() : target.str());
      }
    }

    std::string symbol = symbol_for(k.name);
    for (int n = 2; symbols_.count(symbol); ++n) symbol = symbol_for(k.name) + "_" + std::to_string(n);
    symbols_.insert(symbol);
    k.symbol = symbol;

    FunctionEmitter emitter(ast, diags, module_);
    mlir::func::FuncOp func;
    try {
      func = emitter.emit_kernel(fd, symbol, k);
    } catch (const EmitAbort&) {
      if (auto* op = module_.lookupSymbol(symbol)) op->erase();
      return;
    }
    // Warpgroups are 128 consecutive threads (docs/matrix.md): a block of another size has a
    // partial one, which no target's warpgroup products can serve.
    if (uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2]; threads % ir::kWarpgroupThreads != 0) {
      bool uses = false;
      func.walk([&](mlir::Operation* op) { uses |= ir::warpgroup_op_of(op).has_value(); });
      if (uses) {
        func.erase();
        const auto* block = find_annotation(fd, "qv.block");
        return report(block ? block->getLocation() : fd->getLocation(),
                      "kernel '" + k.name + "' uses warpgroup builtins, so its block needs a multiple of 128 threads (it has " +
                          std::to_string(threads) + ")");
      }
    }
    mlir::OpBuilder b(module_.getContext());
    func->setAttr("qv.block", b.getDenseI32ArrayAttr({(int32_t)k.block[0], (int32_t)k.block[1], (int32_t)k.block[2]}));
    func->setAttr("qv.name", b.getStringAttr(k.name));
    if (min_blocks) func->setAttr("qv.min_blocks", b.getI32IntegerAttr(static_cast<int32_t>(min_blocks)));
    result_.kernels.push_back(std::move(entry));
  }

  clang::CompilerInstance& ci_;
  mlir::ModuleOp module_;
  Result& result_;
  std::set<std::string>& symbols_;
  const std::vector<std::string>& targets_;   // what QV_TARGETS may name (Options::targets)
};

class Action : public clang::ASTFrontendAction {
 public:
  Action(mlir::ModuleOp m, Result& r, std::set<std::string>& s, const std::vector<std::string>& t)
      : module_(m), result_(r), symbols_(s), targets_(t) {}
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& ci, llvm::StringRef) override {
    return std::make_unique<Consumer>(ci, module_, result_, symbols_, targets_);
  }

 private:
  mlir::ModuleOp module_;
  Result& result_;
  std::set<std::string>& symbols_;
  const std::vector<std::string>& targets_;
};

class Factory : public clang::tooling::FrontendActionFactory {
 public:
  Factory(mlir::ModuleOp m, Result& r, const std::vector<std::string>& t) : module_(m), result_(r), targets_(t) {}
  std::unique_ptr<clang::FrontendAction> create() override {
    return std::make_unique<Action>(module_, result_, symbols_, targets_);
  }

 private:
  mlir::ModuleOp module_;
  Result& result_;
  std::set<std::string> symbols_;
  const std::vector<std::string>& targets_;
};

}  // namespace

bool compile(mlir::MLIRContext& context, const std::vector<std::string>& sources, const Options& options,
             Result& result) {
  result.module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  std::vector<std::string> args = {"-std=c++20", "-D__QUIVER__=1", "-Wno-unknown-attributes", "-fmessage-length=0",
                                   "-I" + options.quiver_include_dir, "-resource-dir", options.clang_resource_dir};
  for (const auto& d : options.include_dirs) args.push_back("-I" + d);
  for (const auto& d : options.defines) args.push_back("-D" + d);
  clang::tooling::FixedCompilationDatabase db(".", args);
  Factory factory(*result.module, result, options.targets);
  // One tool run per source: ClangTool prints progress lines when given several files.
  bool ok = true;
  for (const std::string& source : sources) {
    clang::tooling::ClangTool tool(db, {source});
    tool.setPrintErrorMessage(false);
    ok &= tool.run(&factory) == 0;
  }
  if (!ok) return false;
  std::string error;
  std::optional<llvm::DefaultThreadPool> pool;
  if (options.threads > 1 && !context.isMultithreadingEnabled()) {
    pool.emplace(llvm::hardware_concurrency(options.threads));
    context.setThreadPool(*pool);
  }
  bool normalized = ir::normalize(*result.module, error);
  if (pool) {
    context.disableMultithreading();
    pool.reset();   // joins its threads
  }
  if (!normalized) {
    llvm::errs() << "quiverc: " << error << "\n";
    return false;
  }
  for (KernelEntry& k : result.kernels) {
    auto func = result.module->lookupSymbol<mlir::func::FuncOp>(k.manifest.symbol);
    try {
      k.manifest.shared_bytes = ir::workgroup_bytes(func);
    } catch (const std::exception& e) {
      llvm::errs() << "quiverc: kernel '" << k.manifest.name << "': " << e.what() << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace quiver::frontend
