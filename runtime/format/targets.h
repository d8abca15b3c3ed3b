// The image kinds a fat binary may hold (docs/format.md, "Image object"): one table, read by the
// manifest's reader and writer, describe_images, quiver-dump and its disassembler. Adding a kind
// is one line in QUIVER_FORMAT_TARGETS (and its name in runtime/web/qfb.mjs's TARGETS, which
// tests/web checks against this table); nothing else enumerates them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace quiver::format {

// What an image's bytes are, for tools that show them: Text is printable as it is (PTX, MSL,
// WGSL); Binary needs a disassembler, or is shown as bytes.
enum class ImageKind : uint8_t { Text, Binary };

// One line per kind: enumerator, manifest name (files on disk spell it: never renamed), what the
// bytes are, and the name messages use ("the SPIR-V image is ...").
#define QUIVER_FORMAT_TARGETS(X)               \
  X(PTX, "ptx", Text, "PTX")                   \
  X(CUBIN, "cubin", Binary, "cubin")           \
  X(SPIRV, "spirv", Binary, "SPIR-V")          \
  X(CPU, "cpu", Binary, "CPU")                 \
  X(HSACO, "hsaco", Binary, "HSACO")           \
  X(MSL, "msl", Text, "MSL")                   \
  X(METALLIB, "metallib", Binary, "metallib")  \
  X(WGSL, "wgsl", Text, "WGSL")

// One compiled artefact kind. A .qfb holds each kernel in at most one image per (target, arch).
// The values are in-memory only (the manifest stores names), so new kinds may go anywhere in the table.
enum class Target : uint8_t {
#define QUIVER_FORMAT_TARGET_ENUMERATOR(e, name, kind, label) e,
  QUIVER_FORMAT_TARGETS(QUIVER_FORMAT_TARGET_ENUMERATOR)
#undef QUIVER_FORMAT_TARGET_ENUMERATOR
};

struct TargetInfo {
  Target target;
  std::string_view name;    // "ptx", "cubin", ... as the manifest spells it
  ImageKind kind;
  std::string_view label;   // "PTX", "SPIR-V", ... as messages name the image
};

inline constexpr TargetInfo kTargets[] = {
#define QUIVER_FORMAT_TARGET_INFO(e, name, kind, label) {Target::e, name, ImageKind::kind, label},
    QUIVER_FORMAT_TARGETS(QUIVER_FORMAT_TARGET_INFO)
#undef QUIVER_FORMAT_TARGET_INFO
};
inline constexpr size_t kTargetCount = std::size(kTargets);

// Every kind, in table order (which is enum order: info() indexes by the enumerator's value).
inline constexpr std::span<const TargetInfo> targets() { return kTargets; }
inline constexpr const TargetInfo& info(Target t) { return kTargets[static_cast<size_t>(t)]; }

std::string_view to_string(Target t);               // the manifest name: "ptx", "cubin", ...
std::optional<Target> target_from_string(std::string_view s);

}  // namespace quiver::format
