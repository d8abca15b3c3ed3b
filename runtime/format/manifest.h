// The fat-binary manifest: what a .qfb says about its kernels and images. Shared by the packer
// (compiler/pack) that writes it and the runtime reader (runtime/format) that checks it, so both
// sides agree on one in-memory form. The byte layout is specified in docs/format.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/targets.h"   // Target, its names and kinds

namespace quiver::format {

// Element / scalar types a kernel parameter can have (KERNEL_LANGUAGE.md "Types").
enum class ScalarType : uint8_t {
  Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64,
};
std::string_view to_string(ScalarType t);          // "bool", "int8_t", ..., "half", "bf16", "float", "double"
std::optional<ScalarType> scalar_type_from_string(std::string_view s);
uint32_t size_of(ScalarType t);                     // bytes of one element (bool = 1)

enum class Access : uint8_t { Read, ReadWrite };    // buffers: const T* = Read; scalars are always Read

struct Param {
  std::string name;        // the C++ parameter name
  ScalarType type;         // element type (for a buffer) or the scalar's type
  uint32_t vec_width = 1;  // 1, 2, 4, 8: qv::vec<T, N> elements
  bool is_buffer = false;  // T* / const T*
  Access access = Access::Read;
};

struct Kernel {
  std::string name;                    // canonical C++ spelling: "saxpy", "scale_rows<float, 4096>"
  std::string symbol;                  // entry-point symbol inside every image: "qv_k<index>_<sanitized>"
  std::vector<Param> params;
  std::array<uint32_t, 3> block{256, 1, 1};
  uint32_t shared_bytes = 0;           // static workgroup memory
  std::vector<Target> targets;         // image kinds that contain this kernel
  bool uses_barrier = false;           // the CPU backend runs such kernels as fibers
};

struct Image {
  Target target;
  std::string arch;                    // "sm_90" (ptx: minimum arch; cubin: exact), "vulkan1.2", "x86_64", ...
  uint64_t offset = 0;                 // absolute file offset of the zstd frame
  uint64_t size = 0;                   // compressed bytes
  uint64_t raw_size = 0;               // decompressed bytes
  uint64_t checksum = 0;               // FNV-1a 64 of the compressed bytes
  std::vector<std::string> kernels;    // kernel symbols this image contains
  // What a device must offer to run the image, beyond its target and arch ("requires" in the
  // manifest; docs/format.md "Image requirements"): the runtime loads the best image whose
  // requirements it knows and the device meets. Empty for portable images.
  std::vector<std::string> requirements;
  // Every kernel of the image waits for the launches queued before it before it reads memory
  // they may write (griddepcontrol.wait on sm_90+, docs/abi.md "Overlapped launches"), so the
  // runtime may start it while the previous kernel still runs ("programmatic_launch").
  bool programmatic_launch = false;
};

struct Manifest;
// "ptx sm_100, spirv vulkan1.2, cpu x86_64" ("no images" when empty), for NotFound messages.
std::string describe_images(const Manifest& manifest);

struct Manifest {
  std::string compiler_version;        // "quiverc 0.1.0 (LLVM 19.1.7)"
  std::string source_hash;             // FNV-1a 64 hex of the concatenated kernel sources
  std::vector<Kernel> kernels;
  std::vector<Image> images;

  const Kernel* find_kernel(std::string_view name) const;   // by canonical name
};

// Reader limits (docs/format.md, "Limits"): anything beyond them is refused as hostile.
namespace limits {
inline constexpr uint64_t kMaxManifestBytes = 16ull << 20;
inline constexpr uint64_t kMaxImageRawBytes = 1ull << 30;    // decompressed bytes of one image
inline constexpr size_t kMaxKernels = 4096;
inline constexpr size_t kMaxParams = 64;
// The SPIR-V target makes an image per kernel and arch (docs/format.md "SPIR-V images").
inline constexpr size_t kMaxImages = 16384;
// Well above the number of image kinds: a file of a newer minor may list kinds this reader does
// not know (it drops them), so the table's size is no bound on what it must accept.
inline constexpr size_t kMaxTargetsPerKernel = 64;
inline constexpr size_t kMaxNameBytes = 4096;                // kernel/param names, version strings
inline constexpr size_t kMaxSymbolBytes = 512;
inline constexpr size_t kMaxArchBytes = 64;
inline constexpr size_t kMaxRequirements = 64;          // per image
inline constexpr size_t kMaxRequirementBytes = 128;
inline constexpr uint32_t kMaxBlockThreads = 1024;
inline constexpr uint32_t kMaxSharedBytes = 16u << 20;
inline constexpr size_t kMaxJsonDepth = 16;
inline constexpr size_t kMaxJsonValues = 2'000'000;          // bounds the parsed tree's memory
}  // namespace limits

static_assert(kTargetCount <= limits::kMaxTargetsPerKernel, "a kernel may list every target");

// The most shared memory a CUDA kernel may declare statically (`.shared`). A kernel needing more
// gets it as dynamic shared memory of exactly shared_bytes, set up by the PTX target and by the
// CUDA runtime from this same rule (docs/abi.md, "PTX / cubin").
inline constexpr uint32_t kCudaStaticSharedBytes = 48u << 10;

// The manifest as the JSON text stored in a .qfb (indent < 0: compact, as files store it).
std::string manifest_to_json(const Manifest& m, int indent = -1);
// Parses and validates manifest text; errors are quiver::Error(InvalidFatBinary) naming `label`
// and the JSON path of the field. Checks types, limits, names, cross references; not file
// offsets (FatBinary::parse does those). `skip_unknown_targets`: drop images and kernel targets
// whose target name this reader does not know (files of a newer minor version) instead of failing.
Manifest manifest_from_json(std::string_view text, std::string_view label,
                            bool skip_unknown_targets = false);
// A checksum as the manifest spells it: 16 lowercase hex digits.
std::string checksum_hex(uint64_t checksum);

}  // namespace quiver::format
