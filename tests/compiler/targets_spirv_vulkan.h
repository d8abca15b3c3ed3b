// A minimal Vulkan compute harness for the spirv target's tests: it runs one entry point of a
// SPIR-V module with every binding backed by host-visible memory, following docs/abi.md (set 0,
// binding i = parameter i; scalars are small storage buffers). Test-only: the runtime's own
// Vulkan backend lives in runtime/backends/vulkan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace quiver::test {

class VulkanCompute {
 public:
  // The first Vulkan device with a compute queue (Mesa's lavapipe on CI machines); throws
  // std::runtime_error saying why when there is none.
  static VulkanCompute& instance();

  const std::string& device_name() const;

  // Dispatches `grid` workgroups of `entry`; bindings[i] holds binding i's bytes before the run
  // and receives them back afterwards.
  void run(std::span<const uint32_t> spirv, const std::string& entry, std::array<uint32_t, 3> grid,
           std::span<std::vector<std::byte>* const> bindings);

  ~VulkanCompute();
  struct State;

 private:
  VulkanCompute();
  std::unique_ptr<State> state_;
};

// The bytes of one scalar argument.
template <typename T>
std::vector<std::byte> scalar_bytes(T value) {
  std::vector<std::byte> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

template <typename T>
std::vector<std::byte> to_bytes(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> from_bytes(const std::vector<std::byte>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace quiver::test
