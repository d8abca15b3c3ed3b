// Test-side construction of .qfb files, written from docs/format.md independently of the
// library's writer, so malformed files can be built field by field and the library's writer
// can be checked against the document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/fatbin.h"

namespace qfb_test {

using Bytes = std::vector<std::byte>;
using nlohmann::json;

// Header byte positions from docs/format.md ("Header").
namespace hdr {
constexpr size_t kMagic = 0, kMajor = 8, kMinor = 10, kHeaderSize = 12, kFileSize = 16, kManifestOffset = 24,
                 kManifestSize = 32, kManifestChecksum = 40, kFlags = 48, kReserved = 52, kHeaderChecksum = 56;
}  // namespace hdr

Bytes random_bytes(std::mt19937_64& rng, size_t n, int alphabet = 256);
Bytes compress(std::span<const std::byte> raw, bool content_size = true, int level = 3);
std::string hex16(uint64_t v);

// A valid file's parts: the manifest as JSON (image offsets, sizes and checksums are filled
// in by assemble()) and, per manifest image, its compressed frame and raw bytes.
struct Parts {
  json manifest;
  std::vector<Bytes> frames;
  std::vector<Bytes> raw;
};

// Two kernels (one with a barrier), a PTX image holding both, a SPIR-V image holding the first
// and a CPU image holding both, with random image contents.
Parts sample_parts(std::mt19937_64& rng);

struct Layout {
  uint64_t manifest_reserve = 0;   // 0: manifest text length; images follow it 16-aligned
  uint32_t header_size = 64;       // > 64 emulates a newer minor's longer header
  uint16_t major = 1, minor = 0;
};

// Lays the parts out as docs/format.md describes; `edit_manifest` runs after the layout fields
// (offset, size, raw_size, checksum) are filled in, so it can override any of them.
Bytes assemble(const Parts& parts, const std::function<void(json&)>& edit_manifest = {}, Layout layout = {});

uint64_t load_u64(std::span<const std::byte> b, size_t at);
void store_u16(Bytes& b, size_t at, uint16_t v);
void store_u32(Bytes& b, size_t at, uint32_t v);
void store_u64(Bytes& b, size_t at, uint64_t v);
// Recomputes the header checksum after a test has edited header bytes.
void reseal_header(Bytes& file);
// Recomputes the manifest and header checksums after a test has edited manifest bytes in place.
void reseal_manifest(Bytes& file);

// Sets the Frame_Content_Size field of a zstd frame (it must already have one).
void patch_frame_content_size(Bytes& frame, uint64_t value);

}  // namespace qfb_test
