// Reading a .qfb: parse + verify the header and manifest up front, decompress an image only
// when a backend asks for it. Every check failure throws quiver::Error(InvalidFatBinary) whose
// message names the file (label) and the field at fault. Layout: docs/format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"

namespace quiver::format {

class FatBinary {
 public:
  // Copies `bytes`; `label` (a path or "<memory>") appears in every error message.
  static FatBinary parse(std::span<const std::byte> bytes, std::string label);
  static FatBinary read_file(const std::string& path);

  const Manifest& manifest() const { return manifest_; }
  const std::string& label() const { return label_; }
  // Verifies the checksum and decompresses image `index` (bounded by its declared raw_size).
  std::vector<std::byte> image_data(size_t index) const;
  // First image with this target (and arch, when non-empty); -1 when absent.
  int find_image(Target target, std::string_view arch = {}) const;

 private:
  std::vector<std::byte> bytes_;
  Manifest manifest_;
  std::string label_;
};

// Writing (used by compiler/pack and by tests that build files by hand).
struct ImageInput {
  Target target;
  std::string arch;
  std::vector<std::byte> data;          // uncompressed
  std::vector<std::string> kernels;     // kernel symbols inside
};
// `manifest.images` is filled in from `images`; returns the whole file.
std::vector<std::byte> write_fatbin(Manifest manifest, std::span<const ImageInput> images,
                                    int zstd_level = 19);

uint64_t fnv1a64(std::span<const std::byte> data);

}  // namespace quiver::format
