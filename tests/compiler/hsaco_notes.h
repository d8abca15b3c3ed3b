// Test support for HSACO images: the AMDGPU code-object metadata as `llvm-readelf --notes`
// prints it (an independent reader: LLVM's own tool, not quiver's code), and the comparison of
// that metadata with a kernel's manifest entry (docs/abi.md "HSACO").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.h"

namespace quiver::test {

struct HsacoArg {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string value_kind;      // "global_buffer", "by_value", "hidden_block_count_x", ...
  std::string address_space;   // "global" for buffers
};

struct HsacoKernelMeta {
  std::string name;            // .name
  std::string symbol;          // .symbol ("<name>.kd")
  uint64_t kernarg_segment_size = 0;
  uint64_t kernarg_segment_align = 0;
  uint64_t group_segment_fixed_size = 0;
  uint64_t private_segment_fixed_size = 0;
  uint64_t max_flat_workgroup_size = 0;
  uint64_t wavefront_size = 0;
  std::vector<uint64_t> reqd_workgroup_size;
  std::vector<HsacoArg> args;
};

struct HsacoMeta {
  std::string target;          // amdhsa.target: "amdgcn-amd-amdhsa--gfx90a"
  std::vector<HsacoKernelMeta> kernels;
};

// Parses the "AMDGPU Metadata" YAML of `llvm-readelf --notes` output; false with `error` when
// the text lacks it or a kernel entry is malformed.
bool parse_readelf_notes(const std::string& text, HsacoMeta& meta, std::string& error);

// llvm-readelf-19 (or llvm-readelf) found on PATH or in /usr/lib/llvm-19/bin.
std::optional<std::string> find_llvm_tool(const std::string& name);

// Runs `readelf --notes` on `image` and parses it; false with `error` otherwise.
bool read_hsaco_metadata(const std::string& readelf, std::span<const std::byte> image, HsacoMeta& meta,
                         std::string& error);

// Every disagreement between the metadata of one kernel and its manifest entry, as messages
// (empty when they agree): kernel name, explicit arguments in manifest order (global_buffer of 8
// bytes or by_value of the scalar's size at the offsets `expected_offsets` gives), no hidden
// arguments, kernarg segment size, reqd/max flat workgroup size = block, LDS = shared_bytes,
// wavefront size = `wave_size`.
std::vector<std::string> compare_kernel_metadata(const format::Kernel& kernel, const HsacoKernelMeta& meta,
                                                 std::span<const uint32_t> expected_offsets,
                                                 uint64_t expected_kernarg_size, uint64_t wave_size);

// 64 for gfx9 (GCN/CDNA), 32 for gfx10 and newer (RDNA): quiver's choice per processor.
uint64_t expected_wave_size(const std::string& arch);

}  // namespace quiver::test
