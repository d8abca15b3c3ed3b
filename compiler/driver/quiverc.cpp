// quiverc: kernel sources -> front end -> every requested target -> one .qfb
// (plus, on request, the generated header, the embedding source and a depfile).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "driver/build_jobs.h"
#include "driver/parallel_jobs.h"
#include "driver/targets_option.h"
#include "format/fatbin.h"
#include "frontend/frontend.h"
#include "ir/normalize.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "pack/header.h"
#include "pack/pack.h"
#include "targets/target.h"
#include "llvm/Support/raw_ostream.h"

namespace fs = std::filesystem;
using namespace quiver;

namespace {

[[noreturn]] void fail(const std::string& msg) {
  std::cerr << "quiverc: error: " << msg << "\n";
  std::exit(1);
}

void write_file(const fs::path& path, std::string_view data) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) fail("cannot write '" + path.string() + "'");
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) fail("cannot write '" + path.string() + "'");
  }
  fs::rename(tmp, path);
}

// <quiver/kernel.h>: next to an installed quiverc (<prefix>/bin/../include) or in the source tree.
std::string quiver_include_dir(const char* argv0) {
  std::error_code ec;
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) exe = fs::absolute(argv0);
  fs::path installed = exe.parent_path().parent_path() / "include";
  if (fs::exists(installed / "quiver" / "kernel.h")) return installed.string();
  return QUIVER_SOURCE_INCLUDE_DIR;
}

std::string escape_make(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quiverc: compile quiver kernels (annotated C++) into a fat binary (.qfb)"};
  std::vector<std::string> sources, include_dirs, defines;
  std::string output, targets_spec, header_path, ns, embed_path, depfile, keep_temps;
  bool verbose = false;
  unsigned jobs_option = 0;
  app.add_option("sources", sources, "kernel source files")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", output, "output fat binary (.qfb)")->required();
  app.add_option("--targets", targets_spec, compiler::targets_help());
  app.add_option("--emit-header", header_path, "write a C++ header with typed launch wrappers");
  app.add_option("--namespace", ns, "C++ namespace of the generated header / embedding");
  app.add_option("--emit-embed", embed_path, "write a C++ source that embeds the fat binary");
  app.add_option("--depfile", depfile, "write a Makefile depfile listing every file read");
  app.add_option("-I", include_dirs, "add an include directory")->allow_extra_args(false);
  app.add_option("-D", defines, "define a macro (name or name=value)")->allow_extra_args(false);
  app.add_option("--keep-temps", keep_temps, "keep intermediate files (IR, per-target outputs) in this directory");
  app.add_option("-j,--jobs", jobs_option,
                 "compile targets in up to N processes at once (default: the CPUs this process may use; 1: in this "
                 "process, one after the other); the output is the same bytes for every N")
      ->check(CLI::Range(1u, 1024u));
  app.add_flag("-v,--verbose", verbose, "print what is compiled");
  app.set_version_flag("--version", compiler::compiler_version());
  CLI11_PARSE(app, argc, argv);
  if ((!header_path.empty() || !embed_path.empty()) && ns.empty()) ns = "qv_kernels";

  std::vector<compiler::TargetRequest> requests;
  try {
    requests = compiler::parse_targets(targets_spec);
  } catch (const std::exception& e) {
    fail(e.what());
  }

  mlir::DialectRegistry registry;
  ir::register_dialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();

  frontend::Options fopts;
  fopts.include_dirs = include_dirs;
  fopts.defines = defines;
  fopts.quiver_include_dir = quiver_include_dir(argv[0]);
  fopts.clang_resource_dir = QUIVER_CLANG_RESOURCE_DIR;
  fopts.targets = compiler::target_names();
  fopts.threads = jobs_option == 0 ? compiler::available_cpus() : jobs_option;
  frontend::Result fe;
  auto t0 = std::chrono::steady_clock::now();
  if (!frontend::compile(context, sources, fopts, fe)) return 1;
  if (fe.kernels.empty()) fail("no QV_KERNEL functions found in the sources");
  if (!keep_temps.empty()) {
    fs::create_directories(keep_temps);
    std::string ir;
    llvm::raw_string_ostream os(ir);
    fe.module->print(os);
    write_file(fs::path(keep_temps) / "neutral.mlir", ir);
  }
  if (verbose)
    for (const auto& k : fe.kernels)
      std::cerr << "quiverc: kernel '" << k.manifest.name << "' symbol " << k.manifest.symbol << " block "
                << k.manifest.block[0] << "x" << k.manifest.block[1] << "x" << k.manifest.block[2] << "\n";

  // Each target build is a job (build_jobs.h); with -j > 1 they run in worker processes
  // (parallel_jobs.h) and come back in the same order, so the fat binary is the same bytes.
  std::vector<compiler::BuildJob> jobs = compiler::plan_build_jobs(requests, fe);
  compiler::BuildJobOptions jopts{keep_temps, verbose};
  unsigned workers = std::min<size_t>(jobs_option == 0 ? compiler::available_cpus() : jobs_option, jobs.size());
  if (verbose)
    std::cerr << "quiverc: front end done in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s; " << jobs.size()
              << " target builds on " << std::max(workers, 1u) << " process" << (workers > 1 ? "es" : "") << "\n";
  std::vector<compiler::TargetImage> images;
  std::vector<compiler::JobRun> runs;
  try {
    runs = compiler::run_jobs(jobs.size(), workers,
                              [&](size_t i) { return compiler::run_build_job(jobs[i], fe, jopts); });
  } catch (const std::exception& e) {
    fail(e.what());
  }
  for (compiler::JobRun& run : runs) {
    if (run.died()) compiler::end_like(run.died_status);
    if (run.result.error) fail(*run.result.error);
    for (compiler::TargetImage& img : run.result.images) images.push_back(std::move(img));
  }

  if (verbose)
    std::cerr << "quiverc: targets done at " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s; packing (zstd)\n";
  format::Manifest manifest;
  std::vector<std::byte> bytes;
  try {
    // As many compressing threads as the build had processes (-j).
    unsigned pack_threads = jobs_option == 0 ? compiler::available_cpus() : jobs_option;
    bytes = compiler::pack(fe.kernels, images, fe.source_text, manifest, pack_threads);
  } catch (const std::exception& e) {
    fail(std::string("packing failed: ") + e.what());
  }
  write_file(output, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  try {
    if (!header_path.empty()) write_file(header_path, compiler::generate_header(manifest, ns));
    if (!embed_path.empty()) write_file(embed_path, compiler::generate_embed_source(bytes, ns));
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (!depfile.empty()) {
    // Sorted and once each: Clang lists a source's files in hash order, and a header per source.
    std::vector<std::string> deps;
    for (const auto& dep : fe.dependencies) deps.push_back(fs::absolute(dep).string());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    std::string d = escape_make(output) + ":";
    for (const auto& dep : deps) d += " \\\n  " + escape_make(dep);
    write_file(depfile, d + "\n");
  }
  if (verbose)
    std::cerr << "quiverc: wrote " << output << " (" << bytes.size() << " bytes, " << images.size() << " images) in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  return 0;
}
