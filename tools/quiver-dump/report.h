// What quiver-dump prints: a table for people, JSON for scripts. Both show the same selection
// (all kernels and images, or those --kernel / --target chose).
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/fatbin.h"

namespace quiver::dump {

struct Selection {
  std::vector<size_t> kernels;  // indices into manifest().kernels
  std::vector<size_t> images;   // indices into manifest().images
};

// Per selected image, what image_data() gave (verified and decompressed) and, with --disasm,
// its disassembly.
struct ImageReport {
  size_t index = 0;
  std::optional<std::string> disassembly;
  bool disassembly_ok = false;
};

void print_human(std::ostream& out, const format::FatBinary& fb, const Selection& sel,
                 const std::vector<ImageReport>& images);
nlohmann::json to_json(const format::FatBinary& fb, const Selection& sel, const std::vector<ImageReport>& images);

// "const float*", "vec<half, 4>*", "uint32_t": the parameter as C++ would spell it.
std::string param_spelling(const format::Param& p);

}  // namespace quiver::dump
