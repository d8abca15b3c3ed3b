#include "hsa_dispatch.h"

#include <algorithm>
#include <cstring>


namespace quiver::backend::hsa {

namespace {

constexpr uint32_t kPointerBytes = 8;

uint32_t scalar_bytes(format::ScalarType type) {
  // bool travels as a 32-bit 0/1 on every target (docs/abi.md).
  return type == format::ScalarType::Bool ? 4 : format::size_of(type);
}

}  // namespace

KernargLayout kernarg_layout(std::span<const format::Param> params) {
  KernargLayout layout;
  uint32_t end = 0;
  for (const format::Param& p : params) {
    uint32_t size = p.is_buffer ? kPointerBytes : scalar_bytes(p.type) * std::max<uint32_t>(p.vec_width, 1);
    uint32_t align = p.is_buffer ? kPointerBytes : scalar_bytes(p.type);
    uint32_t offset = (end + align - 1) / align * align;
    layout.offsets.push_back(offset);
    layout.sizes.push_back(size);
    layout.alignment = std::max(layout.alignment, align);
    end = offset + size;
  }
  layout.size = end;
  return layout;
}

std::vector<std::byte> pack_kernargs(const KernargLayout& layout, std::span<const KernargValue> values) {
  if (values.size() != layout.offsets.size())
    throw Error(ErrorCode::InvalidArgument, "hip: " + std::to_string(values.size()) + " kernel arguments for " +
                                                std::to_string(layout.offsets.size()) + " parameters");
  std::vector<std::byte> bytes(layout.size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].size != layout.sizes[i] || (values[i].size != 0 && values[i].data == nullptr))
      throw Error(ErrorCode::InvalidArgument, "hip: argument " + std::to_string(i) + " has " +
                                                  std::to_string(values[i].size) + " bytes, its kernarg slot " +
                                                  std::to_string(layout.sizes[i]));
    if (values[i].size) std::memcpy(bytes.data() + layout.offsets[i], values[i].data, values[i].size);
  }
  return bytes;
}

hsa_kernel_dispatch_packet_t make_dispatch_packet(const std::array<uint32_t, 3>& block, const Grid& grid,
                                                  uint64_t kernel_object, void* kernarg_address,
                                                  uint32_t group_segment_size, uint32_t private_segment_size,
                                                  hsa_signal_t completion_signal) {
  const uint32_t blocks[3] = {grid.x, grid.y, grid.z};
  uint32_t items[3];
  for (int d = 0; d < 3; ++d) {
    uint64_t n = uint64_t{blocks[d]} * block[d];
    if (blocks[d] == 0 || n > UINT32_MAX)
      throw Error(ErrorCode::InvalidArgument, "hip: grid dimension " + std::string(1, "xyz"[d]) + " of " +
                                                  std::to_string(blocks[d]) + " blocks of " + std::to_string(block[d]) +
                                                  " threads is outside 1 .. 2^32 - 1 threads");
    if (block[d] == 0 || block[d] > UINT16_MAX)
      throw Error(ErrorCode::InvalidArgument, "hip: block dimension " + std::to_string(block[d]) + " out of range");
    items[d] = static_cast<uint32_t>(n);
  }
  hsa_kernel_dispatch_packet_t p{};
  p.workgroup_size_x = static_cast<uint16_t>(block[0]);
  p.workgroup_size_y = static_cast<uint16_t>(block[1]);
  p.workgroup_size_z = static_cast<uint16_t>(block[2]);
  p.grid_size_x = items[0];
  p.grid_size_y = items[1];
  p.grid_size_z = items[2];
  p.private_segment_size = private_segment_size;
  p.group_segment_size = group_segment_size;
  p.kernel_object = kernel_object;
  p.kernarg_address = kernarg_address;
  p.completion_signal = completion_signal;
  return p;
}

uint32_t dispatch_header_and_setup() {
  uint32_t header = (uint32_t{HSA_PACKET_TYPE_KERNEL_DISPATCH} << HSA_PACKET_HEADER_TYPE) |
                    (1u << HSA_PACKET_HEADER_BARRIER) |
                    (uint32_t{HSA_FENCE_SCOPE_SYSTEM} << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (uint32_t{HSA_FENCE_SCOPE_SYSTEM} << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  uint32_t setup = 3u << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  return header | (setup << 16);
}

std::string processor_of(std::string_view isa_name) {
  constexpr std::string_view kPrefix = "amdgcn-amd-amdhsa--";
  if (isa_name.substr(0, kPrefix.size()) == kPrefix) isa_name.remove_prefix(kPrefix.size());
  return std::string(isa_name.substr(0, isa_name.find(':')));
}

std::optional<size_t> choose_hsaco_image(const format::Manifest& manifest, std::string_view processor) {
  for (size_t i = 0; i < manifest.images.size(); ++i)
    if (manifest.images[i].target == format::Target::HSACO && manifest.images[i].arch == processor) return i;
  return std::nullopt;
}

}  // namespace quiver::backend::hsa
