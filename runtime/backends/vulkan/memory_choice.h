// Which of a Vulkan device's memory types an allocation takes, by what it is for. Kept apart from
// the context so that the choice can be tested against the memory types of devices this machine
// does not have (a discrete GPU with and without host-visible device-local memory).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "vulkan_api.h"

namespace quiver::backend::vulkan {

// Device: device-local. Host: host-visible + coherent (cached preferred), mapped.
// Unified: device-local + host-visible + coherent (cached preferred), mapped.
// Upload: host-visible + coherent, mapped, device-local preferred: what the host writes and
// kernels read (scalar arguments). In host memory every kernel's first read of a scalar is a
// trip over the bus (about a microsecond and a half on an H200 through PCIe) before it can form
// an address; device-local memory the host can map (a discrete GPU's BAR) takes the host's
// writes at the same cost and serves the kernels' reads locally.
enum class MemoryUse { Device, Host, Unified, Upload };

// The memory types allowed by `type_bits` that suit `use`, best first: the types with the
// preferred properties, then the others with the required ones. An allocation that fails for
// lack of memory in one (a BAR heap is often 256 MB) tries the next. Empty: none suits.
std::vector<uint32_t> memory_type_candidates(const VkPhysicalDeviceMemoryProperties& properties, uint32_t type_bits,
                                             MemoryUse use);

// Tries `allocate` on the candidates in order and returns the first success. A type whose heap is
// full (VK_ERROR_OUT_OF_DEVICE_MEMORY / _HOST_MEMORY) passes on to the next; any other failure
// stops there. Returns the last result: VK_SUCCESS, that failure, or out-of-memory when every
// type was full (or there was none).
VkResult allocate_first_fitting(const std::vector<uint32_t>& candidates,
                                const std::function<VkResult(uint32_t type)>& allocate);

}  // namespace quiver::backend::vulkan
