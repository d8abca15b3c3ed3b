// Reads every HSACO image of a fat binary with llvm-readelf --notes and checks its AMDGPU
// metadata against the manifest: the code object's target is the image's processor, it holds
// exactly the image's kernels (names = manifest symbols), and each kernel's arguments, kernarg
// segment (the runtime's kernarg_layout, docs/abi.md), workgroup size, LDS size and wave size
// are the ones quiver promises. Usage: hsaco_metadata_check file.qfb [min_images]
// Exit 0 when every image agrees and there are at least min_images (default 1) HSACO images.
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>

#include "format/fatbin.h"
#include "hsa_dispatch.h"
#include "hsaco_notes.h"

using quiver::format::Target;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: hsaco_metadata_check file.qfb [min_images]\n";
    return 2;
  }
  size_t min_images = argc == 3 ? std::strtoul(argv[2], nullptr, 10) : 1;
  std::optional<std::string> readelf = quiver::test::find_llvm_tool("llvm-readelf");
  if (!readelf) {
    std::cerr << "llvm-readelf (LLVM 19) not found\n";
    return 1;
  }
  try {
    auto fb = quiver::format::FatBinary::read_file(argv[1]);
    const auto& manifest = fb.manifest();
    size_t images = 0, kernels = 0, failures = 0;
    std::set<std::string> archs;
    for (size_t i = 0; i < manifest.images.size(); ++i) {
      const auto& image = manifest.images[i];
      if (image.target != Target::HSACO) continue;
      ++images;
      archs.insert(image.arch);
      quiver::test::HsacoMeta meta;
      std::string error;
      if (!quiver::test::read_hsaco_metadata(*readelf, fb.image_data(i), meta, error)) {
        std::cout << "FAIL  hsaco " << image.arch << ": " << error << "\n";
        ++failures;
        continue;
      }
      std::vector<std::string> problems;
      if (meta.target != "amdgcn-amd-amdhsa--" + image.arch)
        problems.push_back("amdhsa.target is '" + meta.target + "'");
      if (meta.kernels.size() != image.kernels.size())
        problems.push_back("the code object has " + std::to_string(meta.kernels.size()) + " kernels, the image lists " +
                           std::to_string(image.kernels.size()));
      for (const std::string& symbol : image.kernels) {
        const quiver::format::Kernel* kernel = nullptr;
        for (const auto& k : manifest.kernels)
          if (k.symbol == symbol) kernel = &k;
        const quiver::test::HsacoKernelMeta* km = nullptr;
        for (const auto& m : meta.kernels)
          if (m.name == symbol) km = &m;
        if (!kernel || !km) {
          problems.push_back(symbol + ": missing from the " + std::string(kernel ? "code object" : "manifest"));
          continue;
        }
        ++kernels;
        quiver::backend::hsa::KernargLayout layout = quiver::backend::hsa::kernarg_layout(kernel->params);
        for (std::string& p : quiver::test::compare_kernel_metadata(*kernel, *km, layout.offsets, layout.size,
                                                                    quiver::test::expected_wave_size(image.arch)))
          problems.push_back(std::move(p));
      }
      for (const std::string& p : problems) std::cout << "FAIL  hsaco " << image.arch << ": " << p << "\n";
      if (problems.empty()) std::cout << "ok    hsaco " << image.arch << ": " << image.kernels.size() << " kernels\n";
      failures += !problems.empty();
    }
    std::cout << images << " HSACO images (" << archs.size() << " processors), " << kernels << " kernels checked, "
              << failures << " images disagree\n";
    return failures == 0 && images >= min_images ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
