// The HSA runtime (ROCm's libhsa-runtime64.so.1), loaded at run time with dlopen: no ROCm header
// or library is needed to build quiver. The types and enum values used here are declared from
// the public HSA Runtime Programmer's Reference (hsa.h, hsa_ext_amd.h): the runtime's stable C ABI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace quiver::backend::hsa {

// ---- HSA types (hsa.h spelling; every handle is a struct holding one 64-bit value) ----
enum hsa_status_t : int {
  HSA_STATUS_SUCCESS = 0x0,
  HSA_STATUS_INFO_BREAK = 0x1,
  HSA_STATUS_ERROR = 0x1000,
  HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008,
  HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B,
};
struct hsa_agent_t { uint64_t handle; };
struct hsa_region_t { uint64_t handle; };
struct hsa_signal_t { uint64_t handle; };
struct hsa_code_object_reader_t { uint64_t handle; };
struct hsa_executable_t { uint64_t handle; };
struct hsa_loaded_code_object_t { uint64_t handle; };
struct hsa_executable_symbol_t { uint64_t handle; };
using hsa_signal_value_t = int64_t;   // the large (64-bit) machine model

struct hsa_queue_t {
  uint32_t type;
  uint32_t features;
  void* base_address;                 // the ring of 64-byte AQL packets
  hsa_signal_t doorbell_signal;
  uint32_t size;                      // packets in the ring (a power of two)
  uint32_t reserved1;
  uint64_t id;
};

// The AQL kernel dispatch packet: 64 bytes, read by the GPU's command processor.
struct hsa_kernel_dispatch_packet_t {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z;   // in work-items, not workgroups
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  void* kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
};
static_assert(sizeof(hsa_kernel_dispatch_packet_t) == 64);

enum hsa_system_info_t : int { HSA_SYSTEM_INFO_VERSION_MAJOR = 0, HSA_SYSTEM_INFO_VERSION_MINOR = 1 };
enum hsa_device_type_t : int { HSA_DEVICE_TYPE_CPU = 0, HSA_DEVICE_TYPE_GPU = 1 };
enum hsa_profile_t : int { HSA_PROFILE_BASE = 0, HSA_PROFILE_FULL = 1 };
enum hsa_default_float_rounding_mode_t : int { HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT = 0 };
enum hsa_agent_info_t : int {
  HSA_AGENT_INFO_NAME = 0,                  // char[64]: "gfx90a"
  HSA_AGENT_INFO_PROFILE = 4,               // hsa_profile_t
  HSA_AGENT_INFO_WAVEFRONT_SIZE = 6,        // uint32_t
  HSA_AGENT_INFO_WORKGROUP_MAX_SIZE = 8,    // uint32_t
  HSA_AGENT_INFO_QUEUE_MAX_SIZE = 14,       // uint32_t
  HSA_AGENT_INFO_DEVICE = 17,               // hsa_device_type_t
  HSA_AMD_AGENT_INFO_PRODUCT_NAME = 0xA009, // char[64]: "AMD Instinct MI210" (hsa_ext_amd.h)
};
enum hsa_region_segment_t : int { HSA_REGION_SEGMENT_GLOBAL = 0 };
enum hsa_region_global_flag_t : int {
  HSA_REGION_GLOBAL_FLAG_KERNARG = 1,
  HSA_REGION_GLOBAL_FLAG_FINE_GRAINED = 2,
  HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED = 4,
};
enum hsa_region_info_t : int {
  HSA_REGION_INFO_SEGMENT = 0,               // hsa_region_segment_t
  HSA_REGION_INFO_GLOBAL_FLAGS = 1,          // uint32_t of hsa_region_global_flag_t
  HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED = 5, // bool
};
enum hsa_queue_type_t : uint32_t { HSA_QUEUE_TYPE_SINGLE = 1 };
enum hsa_signal_condition_t : int { HSA_SIGNAL_CONDITION_EQ = 0, HSA_SIGNAL_CONDITION_LT = 2 };
enum hsa_wait_state_t : int { HSA_WAIT_STATE_BLOCKED = 0 };
enum hsa_executable_symbol_info_t : int {
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE = 11,   // uint32_t
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT = 12,
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE = 13,     // uint32_t
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE = 14,   // uint32_t
  HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT = 22,                 // uint64_t
};

// Packet header fields (hsa_packet_header_t and friends).
constexpr uint16_t HSA_PACKET_TYPE_KERNEL_DISPATCH = 2;
constexpr uint16_t HSA_FENCE_SCOPE_SYSTEM = 2;
constexpr unsigned HSA_PACKET_HEADER_TYPE = 0;
constexpr unsigned HSA_PACKET_HEADER_BARRIER = 8;
constexpr unsigned HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE = 9;
constexpr unsigned HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE = 11;
constexpr unsigned HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS = 0;

// The oldest HSA runtime accepted: 1.1 has code object readers and hsa_executable_create_alt.
constexpr uint16_t kMinVersionMajor = 1;
constexpr uint16_t kMinVersionMinor = 1;

// ---- The loaded library ----
struct Api {
#define QV_HSA_SYMBOL(result, name, params) result(*name) params = nullptr;
#include "hsa_symbols.h"
#undef QV_HSA_SYMBOL

  std::string library;   // the name dlopen was given

  // Loads `library` (default "libhsa-runtime64.so.1"; QUIVER_HSA_LIBRARY overrides it, which is
  // how the tests simulate a machine without ROCm) and resolves every symbol of the table.
  // Returns nullptr with `why_not` set when the library is missing (with dlopen's message) or
  // lacks a symbol (named). Does not initialise the runtime.
  static std::shared_ptr<const Api> load(std::string& why_not);

  // "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate ..." (the runtime's text).
  std::string error_text(hsa_status_t status) const;
};

}  // namespace quiver::backend::hsa
