// The backends built into this libquiver, in the order Device::open() tries them:
// CUDA > HIP > Metal > Vulkan > CPU. A backend folder that needs driver headers adds its
// sources to quiver_runtime and defines QUIVER_HAVE_<NAME>; the CPU backend is always present.
#include <array>

#include "backends/backend.h"

namespace quiver::backend {

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
