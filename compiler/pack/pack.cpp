#include "pack/pack.h"

#include <algorithm>
#include <cstdio>

#include "format/fatbin.h"
#include "llvm/Config/llvm-config.h"

namespace quiver::compiler {

std::string compiler_version() {
  return std::string("quiverc 0.1.0 (LLVM ") + LLVM_VERSION_STRING + ")";
}

std::vector<std::byte> pack(const std::vector<frontend::KernelEntry>& kernels,
                            const std::vector<TargetImage>& images, const std::string& source_text,
                            format::Manifest& manifest, unsigned threads) {
  manifest = {};
  manifest.compiler_version = compiler_version();
  auto hash = format::fnv1a64(std::as_bytes(std::span(source_text.data(), source_text.size())));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  manifest.source_hash = buf;
  std::vector<format::ImageInput> inputs;
  for (const frontend::KernelEntry& k : kernels) {
    format::Kernel m = k.manifest;
    m.targets.clear();
    for (const TargetImage& img : images)
      if (std::count(img.kernels.begin(), img.kernels.end(), m.symbol) &&
          !std::count(m.targets.begin(), m.targets.end(), img.target))
        m.targets.push_back(img.target);
    manifest.kernels.push_back(std::move(m));
  }
  for (const TargetImage& img : images)
    inputs.push_back({img.target, img.arch, img.data, img.kernels, img.requirements, img.programmatic_launch, img.frame});
  std::vector<std::byte> bytes = format::write_fatbin(manifest, inputs, 19, threads);
  // Read back what was written, so the caller's manifest has the image table too.
  manifest = format::FatBinary::parse(bytes, "<packed>").manifest();
  return bytes;
}

}  // namespace quiver::compiler
