// The test kernels' SPIR-V (vulkan_*.comp compiled by glslangValidator and joined by
// spirv-link at build time, embedded by vulkan_embed_binary.cmake).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern const unsigned char quiver_test_vulkan_spirv[];
extern const size_t quiver_test_vulkan_spirv_size;

namespace quiver::test {

// The module exactly as spirv-link wrote it. glslang decorates a gl_WorkGroupSize constant with
// BuiltIn WorkgroupSize in every shader; that built-in applies to all entry points of a module,
// so the linked module (four of them) is ambiguous and the backend must refuse it.
inline std::vector<uint32_t> linked_spirv_words() {
  std::vector<uint32_t> words(quiver_test_vulkan_spirv_size / 4);
  std::memcpy(words.data(), quiver_test_vulkan_spirv, words.size() * 4);
  return words;
}

// The same module with the `OpDecorate %x BuiltIn WorkgroupSize` instructions removed, so each
// entry point's LocalSize execution mode gives its size — the form quiverc emits.
inline std::vector<uint32_t> kernel_spirv_words() {
  const std::vector<uint32_t> in = linked_spirv_words();
  std::vector<uint32_t> out(in.begin(), in.begin() + 5);
  for (size_t at = 5; at < in.size();) {
    const uint32_t count = in[at] >> 16, opcode = in[at] & 0xffffu;
    if (count == 0 || at + count > in.size()) break;   // malformed: keep what was read
    const bool workgroup_size_builtin = opcode == 71 && count >= 4 && in[at + 2] == 11 && in[at + 3] == 25;
    if (!workgroup_size_builtin) out.insert(out.end(), in.begin() + at, in.begin() + at + count);
    at += count;
  }
  return out;
}

inline std::vector<std::byte> to_bytes(const std::vector<uint32_t>& words) {
  std::vector<std::byte> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

}  // namespace quiver::test
