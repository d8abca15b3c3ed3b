#include "cuda_image_select.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>

namespace quiver::backend::cuda {

std::optional<SmArch> parse_sm_arch(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  arch.remove_prefix(3);
  SmArch out;
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) {
    out.variant = arch.back();
    arch.remove_suffix(1);
  }
  // Two or three digits: the last is the minor version ("sm_90", "sm_100", "sm_120").
  if (arch.size() < 2 || arch.size() > 3) return std::nullopt;
  for (char c : arch)
    if (c < '0' || c > '9') return std::nullopt;
  out.minor = arch.back() - '0';
  out.major = 0;
  for (size_t i = 0; i + 1 < arch.size(); ++i) out.major = out.major * 10 + (arch[i] - '0');
  if (out.major == 0) return std::nullopt;
  return out;
}

namespace {

bool cubin_runs_on(const SmArch& image, int major, int minor) {
  if (image.major != major) return false;
  if (image.variant == 'a') return image.minor == minor;
  return image.minor <= minor;
}

bool ptx_runs_on(const SmArch& image, int major, int minor) {
  if (image.variant == 'a') return image.major == major && image.minor == minor;
  if (image.variant == 'f') return image.major == major && image.minor <= minor;
  return image.major * 10 + image.minor <= major * 10 + minor;
}

}  // namespace

std::vector<ImageChoice> rank_cuda_images(const format::Manifest& manifest, int major, int minor) {
  struct Candidate {
    ImageChoice choice;
    std::tuple<int, int, int, int> key;   // larger is better
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < manifest.images.size(); ++i) {
    const format::Image& image = manifest.images[i];
    if (image.target != format::Target::CUBIN && image.target != format::Target::PTX) continue;
    std::optional<SmArch> arch = parse_sm_arch(image.arch);
    if (!arch) continue;   // an arch this runtime cannot read is never guessed at
    const bool is_cubin = image.target == format::Target::CUBIN;
    if (is_cubin ? !cubin_runs_on(*arch, major, minor) : !ptx_runs_on(*arch, major, minor))
      continue;
    const bool exact = arch->major == major && arch->minor == minor;
    ImageChoice choice;
    choice.index = i;
    choice.jit = !is_cubin;
    choice.description = std::string(is_cubin ? "cubin " : "ptx ") + image.arch +
                         (is_cubin ? "" : " (JIT)");
    // cubin > PTX; then exact SM; then newer arch; then arch-specific ('a') over family/generic.
    int variant_rank = arch->variant == 'a' ? 2 : arch->variant == 'f' ? 1 : 0;
    candidates.push_back({std::move(choice),
                          {is_cubin ? 1 : 0, exact ? 1 : 0, arch->major * 10 + arch->minor,
                           variant_rank}});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.key > b.key; });
  std::vector<ImageChoice> out;
  for (auto& c : candidates) out.push_back(std::move(c.choice));
  return out;
}

namespace {
template <typename T>
T read_le(std::span<const std::byte> data, size_t at) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(std::to_integer<uint8_t>(data[at + i])) << (8 * i);
  return value;
}
// [offset, offset + count * entry) inside `size`, without overflow.
bool table_fits(uint64_t offset, uint64_t count, uint64_t entry, uint64_t size) {
  if (count == 0) return true;
  if (entry == 0 || offset > size || count > (size - offset) / entry) return false;
  return true;
}
}  // namespace

std::string check_cubin(std::span<const std::byte> image) {
  constexpr size_t kHeader = 64;          // Elf64_Ehdr
  constexpr uint16_t kMachineCuda = 190;  // EM_CUDA
  constexpr uint32_t kSectionNoBits = 8;  // SHT_NOBITS: occupies no file space
  if (image.size() < kHeader) return "shorter than an ELF header (" + std::to_string(image.size()) + " bytes)";
  const unsigned char magic[4] = {0x7f, 'E', 'L', 'F'};
  for (int i = 0; i < 4; ++i)
    if (std::to_integer<unsigned char>(image[i]) != magic[i]) return "not an ELF file (a cubin is CUDA ELF)";
  if (std::to_integer<uint8_t>(image[4]) != 2 || std::to_integer<uint8_t>(image[5]) != 1)
    return "not a 64-bit little-endian ELF file";
  if (read_le<uint16_t>(image, 18) != kMachineCuda)
    return "ELF machine " + std::to_string(read_le<uint16_t>(image, 18)) + " is not EM_CUDA (190)";
  const uint64_t size = image.size();
  const uint64_t phoff = read_le<uint64_t>(image, 32), shoff = read_le<uint64_t>(image, 40);
  const uint16_t phentsize = read_le<uint16_t>(image, 54), phnum = read_le<uint16_t>(image, 56);
  const uint16_t shentsize = read_le<uint16_t>(image, 58), shnum = read_le<uint16_t>(image, 60);
  if (!table_fits(phoff, phnum, phentsize, size)) return "its program headers lie outside the image";
  if (!table_fits(shoff, shnum, shentsize, size)) return "its section headers lie outside the image";
  if (shnum > 0 && shentsize < 64) return "its section header entries are too small";
  for (uint16_t i = 0; i < shnum; ++i) {
    const size_t at = shoff + size_t{i} * shentsize;
    if (read_le<uint32_t>(image, at + 4) == kSectionNoBits) continue;
    const uint64_t offset = read_le<uint64_t>(image, at + 24), bytes = read_le<uint64_t>(image, at + 32);
    if (offset > size || bytes > size - offset)
      return "section " + std::to_string(i) + " lies outside the image";
  }
  return "";
}

bool use_programmatic_launch(const format::Image& image, bool driver_has_launch_ex, int cc_major, const char* env) {
  return image.programmatic_launch && driver_has_launch_ex && cc_major >= 9 &&
         (env == nullptr || std::string_view(env) != "0");
}

}  // namespace quiver::backend::cuda
