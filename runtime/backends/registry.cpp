// The backends built into this libquiver, in the order Device::open() tries them:
// CUDA > HIP > Metal > Vulkan > CPU. A backend folder that needs driver headers adds its
// sources to quiver_runtime and defines QUIVER_HAVE_<NAME>; the CPU backend is always present.
// Also the live counts of backend objects (backend.h, live_objects()).
#include <array>
#include <atomic>

#include "backends/backend.h"

namespace quiver::backend {

namespace {
std::atomic<size_t> g_live_devices{0};
std::atomic<size_t> g_live_modules{0};
}  // namespace

Device::Device() { g_live_devices.fetch_add(1, std::memory_order_relaxed); }
Device::~Device() { g_live_devices.fetch_sub(1, std::memory_order_relaxed); }
Module::Module() { g_live_modules.fetch_add(1, std::memory_order_relaxed); }
Module::~Module() { g_live_modules.fetch_sub(1, std::memory_order_relaxed); }

LiveObjects live_objects() {
  return LiveObjects{g_live_devices.load(std::memory_order_relaxed), g_live_modules.load(std::memory_order_relaxed)};
}

#ifdef QUIVER_HAVE_CUDA
extern const Factory cuda_factory;
#endif
#ifdef QUIVER_HAVE_HSA
extern const Factory hsa_factory;
#endif
#ifdef QUIVER_HAVE_METAL
extern const Factory metal_factory;
#endif
#ifdef QUIVER_HAVE_VULKAN
extern const Factory vulkan_factory;
#endif
extern const Factory cpu_factory;

std::span<const Factory> registry() {
  static const auto factories = std::to_array<Factory>({
#ifdef QUIVER_HAVE_CUDA
      cuda_factory,
#endif
#ifdef QUIVER_HAVE_HSA
      hsa_factory,
#endif
#ifdef QUIVER_HAVE_METAL
      metal_factory,
#endif
#ifdef QUIVER_HAVE_VULKAN
      vulkan_factory,
#endif
      cpu_factory,
  });
  return factories;
}

}  // namespace quiver::backend
