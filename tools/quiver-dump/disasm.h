// Turning one image's bytes into something a person can read: PTX/MSL/WGSL are text already,
// SPIR-V goes through the SPIRV-Tools library, ELF images (cpu, hsaco, cubin) through an
// external disassembler when one is installed.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "format/manifest.h"

namespace quiver::dump {

struct Disassembly {
  bool ok = false;     // false: `text` says why there is no disassembly
  std::string text;
};

// `kernel_symbol` (optional) narrows HSACO disassembly to that kernel's function and an MSL
// image to that kernel's translation unit.
Disassembly disassemble(const format::Image& image, std::span<const std::byte> data,
                        const std::string& kernel_symbol = {});

}  // namespace quiver::dump
