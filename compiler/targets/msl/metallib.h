// Private to the MSL target: a metallib built with Apple's toolchain when the build machine has
// it (`xcrun metal` / `xcrun metallib`, macOS with Xcode or its command line tools). Elsewhere
// quiverc emits the MSL image alone and the Metal backend compiles it at load time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "msl_image.h"
#include "targets/target.h"

namespace quiver::compiler::msl {

// The path of xcrun when `xcrun -sdk macosx -f metal` and `... -f metallib` both succeed.
std::optional<std::string> find_apple_metal_tools();

// Compiles every unit of `image` to AIR (`metal -c -std=macos-metal<M>.<m>`) and links them into
// one metallib. Throws TargetError (naming the kernel whose unit failed) with the tool's output.
std::vector<std::byte> build_metallib(const std::string& xcrun, const msl_image::Image& image,
                                      const std::string& all_kernels, const TargetOptions& options);

}  // namespace quiver::compiler::msl
