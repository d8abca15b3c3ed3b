// Which image of a fat binary the CUDA backend loads on a device of a given compute capability.
// Pure logic (no driver calls), so it is unit-tested on machines without a GPU.
//
// The rules are NVIDIA's binary-compatibility rules:
//  - a cubin runs on its own SM (sm_90 on 9.0) and, when it is not arch-specific, on a later
//    minor of the same major (sm_80 cubin on 8.6); never across majors. `sm_90a` (arch-specific)
//    runs on 9.0 only; `sm_100f` (family) on 10.x with x >= 0.
//  - PTX is JIT-compiled by the driver for any device at or above its arch; `a` PTX only on its
//    exact arch, `f` PTX within its major.
// Ranking: matching cubins first (exact SM before an older minor; arch-specific before generic),
// then PTX newest first — so no JIT happens when a cubin fits.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/manifest.h"

namespace quiver::backend::cuda {

struct SmArch {
  int major = 0;
  int minor = 0;
  char variant = 0;   // 0, 'a' (arch-specific) or 'f' (family-specific)
};
// "sm_90" -> {9, 0}, "sm_90a" -> {9, 0, 'a'}, "sm_100f" -> {10, 0, 'f'}; nullopt when malformed.
std::optional<SmArch> parse_sm_arch(std::string_view arch);

struct ImageChoice {
  size_t index = 0;          // into manifest.images
  bool jit = false;          // PTX: the driver compiles it at load time
  std::string description;   // "cubin sm_90", "ptx sm_80 (JIT)"
};

// Every image usable on a device of compute capability major.minor, best first. Empty when none fits.
std::vector<ImageChoice> rank_cuda_images(const format::Manifest& manifest, int major, int minor);

// cuModuleLoadDataEx takes no size: the driver trusts a cubin's ELF headers. Before one is handed
// over, check that it is a 64-bit little-endian CUDA ELF whose header, program headers and
// section contents all lie inside the `size` bytes we have. Returns "" when it does, else why not.
std::string check_cubin(std::span<const std::byte> image);

// Whether the launches of a module loaded from `image` overlap (docs/abi.md "Overlapped
// launches": cuLaunchKernelEx with programmatic stream serialization): the image is marked
// programmatic_launch, the driver exports cuLaunchKernelEx, the device is of compute capability
// 9.0 or later, and QUIVER_CUDA_PROGRAMMATIC_LAUNCH (`env`: its value, null when unset) is not
// "0".
bool use_programmatic_launch(const format::Image& image, bool driver_has_launch_ex, int cc_major, const char* env);

using format::describe_images;   // format/manifest.h

}  // namespace quiver::backend::cuda
