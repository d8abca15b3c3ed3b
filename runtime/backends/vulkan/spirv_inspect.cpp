#include "spirv_inspect.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

namespace quiver::backend::vulkan {

namespace {
constexpr uint32_t kOpEntryPoint = 15;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kOpConstant = 43;
constexpr uint32_t kOpConstantComposite = 44;
constexpr uint32_t kOpDecorate = 71;
constexpr uint32_t kDecorationSpecId = 1;
constexpr uint32_t kExecutionModeLocalSize = 17;
constexpr uint32_t kDecorationBuiltIn = 11;
constexpr uint32_t kBuiltInWorkgroupSize = 25;
constexpr size_t kHeaderWords = 5;
}  // namespace

const SpirvEntryPoint* SpirvInfo::find(const std::string& name) const {
  for (const SpirvEntryPoint& e : entry_points)
    if (e.name == name) return &e;
  return nullptr;
}

SpirvInfo inspect_spirv(std::span<const uint32_t> words) {
  if (words.size() < kHeaderWords)
    throw std::invalid_argument("SPIR-V module is " + std::to_string(words.size() * 4) +
                                " bytes, shorter than its 20-byte header");
  if (words[0] != kSpirvMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", words[0]);
    throw std::invalid_argument(std::string("bad SPIR-V magic number ") + hex +
                                " (expected 0x07230203, little-endian)");
  }
  SpirvInfo info;
  info.version = words[1];
  struct Mode {
    uint32_t entry;
    std::array<uint32_t, 3> size;
  };
  std::vector<Mode> local_sizes;
  std::vector<uint32_t> workgroup_size_ids;            // objects decorated BuiltIn WorkgroupSize
  std::unordered_map<uint32_t, uint32_t> scalar_constants;           // id -> 32-bit literal
  std::unordered_map<uint32_t, std::vector<uint32_t>> composites;    // id -> constituent ids

  size_t at = kHeaderWords;
  while (at < words.size()) {
    const uint32_t word_count = words[at] >> 16;
    const uint32_t opcode = words[at] & 0xffffu;
    if (word_count == 0)
      throw std::invalid_argument("SPIR-V instruction at word " + std::to_string(at) +
                                  " has a word count of 0");
    if (word_count > words.size() - at)
      throw std::invalid_argument("SPIR-V instruction at word " + std::to_string(at) +
                                  " runs past the end of the module");
    std::span<const uint32_t> operands = words.subspan(at + 1, word_count - 1);
    if (opcode == kOpEntryPoint) {
      if (operands.size() < 3)
        throw std::invalid_argument("SPIR-V OpEntryPoint at word " + std::to_string(at) + " is truncated");
      SpirvEntryPoint entry;
      entry.execution_model = operands[0];
      entry.id = operands[1];
      // The name is a NUL-terminated UTF-8 literal packed 4 bytes per word, low byte first.
      bool terminated = false;
      for (size_t w = 2; w < operands.size() && !terminated; ++w) {
        for (int b = 0; b < 4; ++b) {
          char c = static_cast<char>((operands[w] >> (8 * b)) & 0xffu);
          if (c == '\0') {
            terminated = true;
            break;
          }
          entry.name.push_back(c);
        }
      }
      if (!terminated)
        throw std::invalid_argument("SPIR-V OpEntryPoint at word " + std::to_string(at) +
                                    " has an unterminated name");
      info.entry_points.push_back(std::move(entry));
    } else if (opcode == kOpExecutionMode && operands.size() >= 5 &&
               operands[1] == kExecutionModeLocalSize) {
      local_sizes.push_back({operands[0], {operands[2], operands[3], operands[4]}});
    } else if (opcode == kOpDecorate && operands.size() >= 3 && operands[1] == kDecorationBuiltIn &&
               operands[2] == kBuiltInWorkgroupSize) {
      workgroup_size_ids.push_back(operands[0]);
    } else if (opcode == kOpDecorate && operands.size() == 3 && operands[1] == kDecorationSpecId) {
      info.spec_ids.push_back(operands[2]);
    } else if (opcode == kOpConstant && operands.size() == 3) {
      scalar_constants[operands[1]] = operands[2];
    } else if (opcode == kOpConstantComposite && operands.size() >= 2) {
      composites[operands[1]].assign(operands.begin() + 2, operands.end());
    }
    at += word_count;
  }
  std::sort(info.spec_ids.begin(), info.spec_ids.end());
  info.spec_ids.erase(std::unique(info.spec_ids.begin(), info.spec_ids.end()), info.spec_ids.end());
  for (const Mode& m : local_sizes)
    for (SpirvEntryPoint& e : info.entry_points)
      if (e.id == m.entry) e.local_size = m.size;

  // A BuiltIn WorkgroupSize object overrides LocalSize for EVERY entry point of the module
  // (glslang emits one per shader; linking several shaders leaves several). With more than one
  // the effective size is ambiguous: drivers silently pick one and run kernels with the wrong
  // shape, so such a module is refused. With exactly one, it is the effective size.
  if (workgroup_size_ids.size() > 1)
    throw std::invalid_argument(
        "the module decorates " + std::to_string(workgroup_size_ids.size()) +
        " objects with BuiltIn WorkgroupSize; that built-in sets the workgroup size of every entry "
        "point, so a module with several kernels must give sizes with LocalSize execution modes only");
  if (workgroup_size_ids.size() == 1) {
    std::optional<std::array<uint32_t, 3>> size;
    auto it = composites.find(workgroup_size_ids[0]);
    if (it != composites.end() && it->second.size() == 3) {
      std::array<uint32_t, 3> v{};
      bool literal = true;
      for (int d = 0; d < 3; ++d) {
        auto c = scalar_constants.find(it->second[d]);
        if (c == scalar_constants.end()) literal = false;   // e.g. a specialization constant
        else v[d] = c->second;
      }
      if (literal) size = v;
    }
    for (SpirvEntryPoint& e : info.entry_points) e.local_size = size;
  }
  return info;
}

}  // namespace quiver::backend::vulkan
