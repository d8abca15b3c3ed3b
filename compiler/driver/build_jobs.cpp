#include "driver/build_jobs.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "format/fatbin.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler {

namespace fs = std::filesystem;

namespace {

// QV_TARGETS entries are a target ("ptx") or a target and one arch ("ptx:sm_90a").
bool allowed(const frontend::KernelEntry& k, const std::string& target, const std::string& arch) {
  if (k.allowed_targets.empty()) return true;
  for (const std::string& t : k.allowed_targets)
    if (t == target || (!arch.empty() && t == target + ":" + arch)) return true;
  return false;
}

// CPU seconds of this process and of the tools it ran (ptxas, ld.lld) so far.
double cpu_seconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    for (const timeval& t : {u.ru_utime, u.ru_stime}) total += static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6;
  }
  return total;
}

std::string joined(const std::vector<std::string>& archs) {
  std::string out;
  for (const std::string& a : archs) out += (out.empty() ? "" : ",") + a;
  return out;
}

}  // namespace

std::vector<BuildJob> plan_build_jobs(const std::vector<TargetRequest>& requests, const frontend::Result& fe) {
  std::vector<BuildJob> jobs;
  for (const TargetRequest& req : requests) {
    const TargetEntry* entry = find_target(req.name);
    if (!entry) continue;
    std::unique_ptr<Target> target = entry->create();
    std::vector<std::string> archs = req.archs.empty() ? target->default_archs() : req.archs;
    if (archs.empty()) archs.push_back("");
    // Archs whose kernel selections are the same are built together.
    std::vector<std::pair<std::vector<bool>, std::vector<std::string>>> selections;
    for (const std::string& arch : archs) {
      std::vector<bool> mask;
      for (const frontend::KernelEntry& k : fe.kernels) mask.push_back(allowed(k, req.name, arch));
      auto s = std::find_if(selections.begin(), selections.end(), [&](const auto& x) { return x.first == mask; });
      if (s == selections.end()) selections.push_back({mask, {arch}});
      else s->second.push_back(arch);
    }
    for (const auto& [mask, selection_archs] : selections) {
      BuildJob job{entry, {}, {}};
      std::vector<format::Kernel> selected;
      for (size_t i = 0; i < fe.kernels.size(); ++i)
        if (mask[i]) {
          job.kernels.push_back(i);
          selected.push_back(fe.kernels[i].manifest);
        }
      if (selected.empty()) continue;
      if (selection_archs.size() == 1 && selection_archs[0].empty()) {
        jobs.push_back(std::move(job));
        continue;
      }
      for (std::vector<std::string>& group : target->arch_groups(fe.module.get(), selected, selection_archs)) {
        job.archs = std::move(group);
        jobs.push_back(job);
      }
    }
  }
  return jobs;
}

BuildJobResult run_build_job(const BuildJob& job, const frontend::Result& fe, const BuildJobOptions& options) {
  auto wall_start = std::chrono::steady_clock::now();
  double cpu_start = cpu_seconds();
  std::string name(job.entry->name);
  std::vector<format::Kernel> selected;
  for (size_t i : job.kernels) selected.push_back(fe.kernels[i].manifest);
  // The target may mutate its module: a private copy holding only the job's kernels.
  mlir::ModuleOp neutral = fe.module.get();
  mlir::OwningOpRef<mlir::ModuleOp> clone(neutral.clone());
  for (mlir::Operation& op : llvm::make_early_inc_range(clone->getBody()->getOperations())) {
    auto sym = op.getAttrOfType<mlir::StringAttr>("sym_name");
    if (!op.hasAttr("qv.kernel")) continue;   // intrinsic declarations (ir/intrinsics.h) stay
    bool keep = sym && std::any_of(selected.begin(), selected.end(),
                                   [&](const format::Kernel& k) { return k.symbol == sym.getValue(); });
    if (!keep) op.erase();
  }
  TargetOptions topts;
  topts.archs = job.archs;
  topts.verbose = options.verbose;
  if (!options.keep_temps_dir.empty()) {
    topts.keep_temps_dir = (fs::path(options.keep_temps_dir) / name).string();
    fs::create_directories(topts.keep_temps_dir);
  }
  BuildJobResult result;
  try {
    result.images = job.entry->create()->compile(*clone, selected, topts);
    // Compressed here, in the job's process, while other jobs still build (pack only assembles).
    for (TargetImage& image : result.images) image.frame = format::compress_image(image.data);
  } catch (const TargetError& e) {
    result.error = e.what();
  } catch (const std::exception& e) {
    result.error = name + ": " + e.what();
  }
  // A registry line says which image kinds its target makes: an image of another kind is a bug
  // in the target, stopped here rather than written into the fat binary.
  for (const TargetImage& image : result.images) {
    if (std::find(job.entry->images.begin(), job.entry->images.end(), image.target) != job.entry->images.end())
      continue;
    result.error = name + ": the target made a " + std::string(format::to_string(image.target)) +
                   " image, which its line in compiler/targets/registry.cpp does not list";
    break;
  }
  if (options.verbose && !result.error)
    std::cerr << "quiverc: " << name << (job.archs.empty() ? "" : " " + joined(job.archs)) << " done in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count() << " s (cpu "
              << cpu_seconds() - cpu_start << " s)\n";
  return result;
}

}  // namespace quiver::compiler
