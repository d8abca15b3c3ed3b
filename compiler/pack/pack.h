// Packing: the front end's kernels plus every target's images -> one .qfb (docs/format.md).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "frontend/frontend.h"
#include "targets/target.h"

namespace quiver::compiler {

// The manifest for `kernels` and `images`: each kernel's `targets` lists the image kinds that
// contain it. Returns the file's bytes and fills `manifest` (as written).
// The images are compressed on up to `threads` threads (the same bytes for any number).
std::vector<std::byte> pack(const std::vector<frontend::KernelEntry>& kernels,
                            const std::vector<TargetImage>& images, const std::string& source_text,
                            format::Manifest& manifest, unsigned threads = 1);

std::string compiler_version();

}  // namespace quiver::compiler
