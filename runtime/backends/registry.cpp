// The backends built into this libquiver, in the order Device::open() tries them:
// CUDA > HIP > Metal > Vulkan > CPU. A backend folder adds its sources to quiver_runtime and
// registers with one line, quiver_backend(<name> <rank>) (runtime/CMakeLists.txt), which puts it
// in the generated backends_built.h; the CPU backend is always present.
// Also the live counts of backend objects (backend.h, live_objects()).
#include <array>
#include <atomic>

#include "backends/backend.h"
#include "backends_built.h"

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

// QUIVER_BUILT_BACKENDS(X): X(name) per backend built in, in detection order; each backend
// folder defines `const Factory <name>_factory`.
#define QUIVER_DECLARE_FACTORY(name) extern const Factory name##_factory;
QUIVER_BUILT_BACKENDS(QUIVER_DECLARE_FACTORY)
#undef QUIVER_DECLARE_FACTORY

std::span<const Factory> registry() {
#define QUIVER_FACTORY(name) name##_factory,
  static const auto factories = std::to_array<Factory>({QUIVER_BUILT_BACKENDS(QUIVER_FACTORY)});
#undef QUIVER_FACTORY
  return factories;
}

}  // namespace quiver::backend
