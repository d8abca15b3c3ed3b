// Pure logic of the HSA backend (no runtime calls), unit-tested on machines without an AMD GPU:
// the kernarg segment of a kernel (docs/abi.md "HSACO"), the AQL dispatch packet of a launch,
// and which code object fits an agent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/manifest.h"
#include "hsa_api.h"
#include "quiver/runtime.h"

namespace quiver::backend::hsa {

// Where each manifest parameter lives in the kernarg segment. The AMDGPU calling convention
// places explicit arguments in order, each at the next multiple of its own alignment: a buffer
// is its 64-bit global address (8 bytes, aligned 8), a scalar its value (bool as a 32-bit
// integer, docs/abi.md). quiver's code objects have no hidden arguments, so `size` is the
// whole segment the code object declares (.kernarg_segment_size).
struct KernargLayout {
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> sizes;
  uint32_t size = 0;        // end of the last argument
  uint32_t alignment = 4;   // the largest argument alignment, at least 4
};
KernargLayout kernarg_layout(std::span<const format::Param> params);

// One argument's bytes: the 8-byte device address of a buffer, or a scalar's value.
struct KernargValue {
  const void* data = nullptr;
  uint32_t size = 0;
};
// The segment's bytes (zero padding between arguments). Throws quiver::Error(InvalidArgument)
// when the number of values or a value's size disagrees with the layout.
std::vector<std::byte> pack_kernargs(const KernargLayout& layout, std::span<const KernargValue> values);

// The kernel dispatch packet of one launch of `grid` blocks of `block` work-items, with every
// field but the first 32 bits (header and setup, which the caller publishes last with one
// atomic release store: the command processor may read the slot as soon as the header is valid).
// Throws quiver::Error(InvalidArgument) when the grid has more than 2^32 - 1 work-items in a
// dimension (AQL's grid_size is 32-bit).
hsa_kernel_dispatch_packet_t make_dispatch_packet(const std::array<uint32_t, 3>& block, const Grid& grid,
                                                  uint64_t kernel_object, void* kernarg_address,
                                                  uint32_t group_segment_size, uint32_t private_segment_size,
                                                  hsa_signal_t completion_signal);
// header | setup << 16: a 3-dimensional kernel dispatch with the barrier bit (packets of the
// queue run in order, like a CUDA stream) and system-scope acquire and release fences (results
// are visible to the host and to later packets).
uint32_t dispatch_header_and_setup();

// "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" or "gfx90a:xnack-" -> "gfx90a": the processor,
// without target features. quiver's code objects are built with xnack/sramecc "any", so they
// load whatever the agent's setting.
std::string processor_of(std::string_view isa_name);

// The index of the HSACO image built for `processor` (code objects are per processor: gfx1151
// code does not run on gfx1100); nullopt when the fat binary has none.
std::optional<size_t> choose_hsaco_image(const format::Manifest& manifest, std::string_view processor);

}  // namespace quiver::backend::hsa
