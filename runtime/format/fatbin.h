// Reading a .qfb: parse + verify the header and manifest up front, decompress an image only
// when a backend asks for it. Every check failure throws quiver::Error(InvalidFatBinary) whose
// message names the file (label) and the field at fault. Layout: docs/format.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"

namespace quiver::format {

// The fixed header at offset 0 (docs/format.md, "Header"); all fields little-endian.
inline constexpr uint8_t kMagic[8] = {'Q', 'V', 'F', 'B', 0x0D, 0x0A, 0x1A, 0x0A};
inline constexpr uint16_t kFormatMajor = 1;     // a reader refuses files with a newer major
inline constexpr uint16_t kFormatMinor = 0;     // newer minors only add; older readers accept them
inline constexpr uint32_t kHeaderSize = 64;     // what this version writes
inline constexpr uint32_t kMaxHeaderSize = 4096;
inline constexpr uint64_t kImageAlignment = 16;

struct Header {
  uint16_t major = kFormatMajor;
  uint16_t minor = kFormatMinor;
  uint32_t header_size = kHeaderSize;
  uint64_t file_size = 0;
  uint64_t manifest_offset = 0;
  uint64_t manifest_size = 0;
  uint64_t manifest_checksum = 0;   // FNV-1a 64 of the manifest bytes
  uint32_t flags = 0;               // required-feature bits; none are defined in 1.x
  uint64_t header_checksum = 0;     // FNV-1a 64 of the header with this field taken as zero
};

class FatBinary {
 public:
  // Copies `bytes`; `label` (a path or "<memory>") appears in every error message.
  static FatBinary parse(std::span<const std::byte> bytes, std::string label);
  // The same checks without the copy: the FatBinary reads `bytes` in place, so they must outlive
  // it (Device::load(span), whose FatBinary lives for the call: an op library's 2.6 MB copied and
  // paged in for nothing was a tenth of its load time).
  static FatBinary view(std::span<const std::byte> bytes, std::string label);
  static FatBinary read_file(const std::string& path);

  FatBinary() = default;
  FatBinary(const FatBinary& other);
  FatBinary& operator=(const FatBinary& other);
  FatBinary(FatBinary&&) noexcept = default;   // a moved vector keeps its buffer: data_ stays valid
  FatBinary& operator=(FatBinary&&) noexcept = default;

  const Manifest& manifest() const { return manifest_; }
  const Header& header() const { return header_; }
  const std::string& label() const { return label_; }
  // Verifies the checksum and decompresses image `index` (bounded by its declared raw_size).
  // After prefetch(index), the first call hands over the bytes prefetch decompressed.
  std::vector<std::byte> image_data(size_t index) const;
  // Runs image_data(index) now and keeps the bytes (or the error) for the next image_data(index).
  // Device::load prefetches the images its backend will read before it takes the device's lock,
  // so that checksums and decompression run outside it (docs/runtime.md, "Thread safety"). A
  // FatBinary with prefetched images belongs to one thread (image_data then moves them out).
  void prefetch(size_t index);
  // Image `index`'s stored bytes (its zstd frame, unchecked), valid as long as the file's bytes
  // are: a reader that decompresses an image later, when the FatBinary may be gone (the Vulkan
  // backend, at a kernel's first launch), copies them and hands them to check_image then.
  std::span<const std::byte> image_frame(size_t index) const;
  // image_data's checks and decompression of `frame`, image `index` of the file `label` whose
  // manifest entry is `image`: the same errors, naming the same file and fields.
  static std::vector<std::byte> check_image(std::span<const std::byte> frame, const Image& image, size_t index,
                                            const std::string& label);
  // First image with this target (and arch, when non-empty); -1 when absent.
  int find_image(Target target, std::string_view arch = {}) const;

 private:
  static FatBinary parse_into(FatBinary fb, std::string label);

  std::vector<std::byte> owned_;     // parse / read_file: the file's bytes; view: empty
  std::span<const std::byte> data_;  // the file: owned_, or the caller's bytes (view)
  Header header_;
  Manifest manifest_;
  std::string label_;
  struct Prefetched {
    size_t index;
    std::vector<std::byte> data;
    std::exception_ptr error;   // image_data's exception, thrown again by the call it was for
  };
  mutable std::vector<Prefetched> prefetched_;   // not copied: a copy decompresses again
};

// Writing (used by compiler/pack and by tests that build files by hand).
struct ImageInput {
  Target target;
  std::string arch;
  std::vector<std::byte> data;          // uncompressed
  std::vector<std::string> kernels;     // kernel symbols inside
  std::vector<std::string> requirements;   // Image::requirements
  bool programmatic_launch = false;        // Image::programmatic_launch
  // The image's zstd frame, where the caller made it already (compress_image with the same
  // level: quiverc's jobs compress while other targets still build); empty: write_fatbin does.
  std::vector<std::byte> frame;
};

// One image's zstd frame as write_fatbin makes it (content size and checksum flags set).
std::vector<std::byte> compress_image(std::span<const std::byte> data, int zstd_level = 19);
// `manifest.images` is filled in from `images`; returns the whole file. The images are compressed
// on up to `threads` threads (each is its own zstd frame: the bytes do not depend on it).
std::vector<std::byte> write_fatbin(Manifest manifest, std::span<const ImageInput> images,
                                    int zstd_level = 19, unsigned threads = 1);

uint64_t fnv1a64(std::span<const std::byte> data);

}  // namespace quiver::format
