// quiver-dump: show everything a .qfb holds (docs/format.md) -- header, manifest, images and,
// with --disasm, the images' code.
//
//   quiver-dump ops.qfb [--json] [--kernel NAME] [--target ptx|cubin|spirv|cpu|...] [--disasm]
//
// Every image shown is verified (checksum, bounded decompression) first, so a clean exit means
// the selected part of the file is intact. Errors: "quiver-dump: <message>", exit status 1.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>

#include "disasm.h"
#include "format/fatbin.h"
#include "quiver/runtime.h"
#include "report.h"

namespace {

using namespace quiver;

struct Options {
  std::string path;
  bool json = false;
  bool disasm = false;
  std::string kernel;
  std::string target;
};

// "ptx|cubin|...": every image kind of the format's target table.
std::string target_names() {
  std::string s;
  for (const format::TargetInfo& t : format::targets()) s += (s.empty() ? "" : "|") + std::string(t.name);
  return s;
}

// Applies --kernel and --target; a filter that matches nothing is an error, naming what exists.
dump::Selection select(const format::FatBinary& fb, const Options& opt) {
  const format::Manifest& m = fb.manifest();
  std::optional<format::Target> target;
  if (!opt.target.empty()) target = format::target_from_string(opt.target);  // validated by CLI11
  const format::Kernel* kernel = nullptr;
  if (!opt.kernel.empty()) {
    kernel = m.find_kernel(opt.kernel);
    if (!kernel) {
      std::string names;
      for (const format::Kernel& k : m.kernels) names += (names.empty() ? "" : ", ") + k.name;
      throw Error(ErrorCode::NotFound, fb.label() + ": no kernel named '" + opt.kernel + "' (kernels: " +
                                           (names.empty() ? "none" : names) + ")");
    }
  }
  dump::Selection sel;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const format::Kernel& k = m.kernels[i];
    if (kernel && &k != kernel) continue;
    if (target && std::find(k.targets.begin(), k.targets.end(), *target) == k.targets.end()) continue;
    sel.kernels.push_back(i);
  }
  for (size_t i = 0; i < m.images.size(); ++i) {
    const format::Image& im = m.images[i];
    if (target && im.target != *target) continue;
    if (kernel && std::find(im.kernels.begin(), im.kernels.end(), kernel->symbol) == im.kernels.end()) continue;
    sel.images.push_back(i);
  }
  if (target && sel.images.empty()) {
    std::string have;
    for (const format::Image& im : m.images)
      have += (have.empty() ? "" : ", ") + std::string(format::to_string(im.target)) + " " + im.arch;
    throw Error(ErrorCode::NotFound, fb.label() + ": no " + opt.target + " image" +
                                         (kernel ? " containing kernel '" + kernel->name + "'" : "") +
                                         " (images: " + (have.empty() ? "none" : have) + ")");
  }
  return sel;
}

int run(const Options& opt) {
  format::FatBinary fb = format::FatBinary::read_file(opt.path);
  dump::Selection sel = select(fb, opt);
  std::vector<dump::ImageReport> reports;
  for (size_t i : sel.images) {
    std::vector<std::byte> data = fb.image_data(i);  // throws on a corrupt image
    dump::ImageReport r;
    r.index = i;
    if (opt.disasm) {
      // With --kernel, HSACO and MSL images show only that kernel's code.
      std::string symbol;
      if (!opt.kernel.empty() && !sel.kernels.empty()) symbol = fb.manifest().kernels[sel.kernels[0]].symbol;
      dump::Disassembly d = dump::disassemble(fb.manifest().images[i], data, symbol);
      r.disassembly = std::move(d.text);
      r.disassembly_ok = d.ok;
    }
    reports.push_back(std::move(r));
  }
  if (opt.json) std::cout << dump::to_json(fb, sel, reports).dump(2) << "\n";
  else dump::print_human(std::cout, fb, sel, reports);
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quiver-dump: show the header, manifest and images of a quiver fat binary (.qfb)"};
  Options opt;
  app.add_option("file", opt.path, "the .qfb file")->required();
  app.add_flag("--json", opt.json, "print the header fields and manifest as JSON");
  app.add_option("--kernel", opt.kernel, "show only this kernel (canonical name) and the images holding it");
  app.add_option("--target", opt.target, "show only images of this target (" + target_names() + ")")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            return format::target_from_string(s) ? "" : "unknown target '" + s + "' (expected " + target_names() + ")";
          },
          "TARGET"));
  app.add_flag("--disasm", opt.disasm, "also print each selected image's code (PTX/MSL/WGSL text, SPIR-V "
                                       "disassembly, llvm-objdump for CPU and HSACO)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(opt);
  } catch (const quiver::Error& e) {
    std::cerr << "quiver-dump: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "quiver-dump: " << opt.path << ": " << e.what() << "\n";
  }
  return 1;
}
