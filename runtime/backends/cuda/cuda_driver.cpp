#include "cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>

namespace quiver::backend::cuda {

std::shared_ptr<const Driver> Driver::load(std::string& why_not) {
  auto driver = std::make_shared<Driver>();
  const char* override_name = std::getenv("QUIVER_CUDA_LIBRARY");
  driver->library = override_name && *override_name ? override_name : "libcuda.so.1";

  // The handle is never dlclose()d: the driver registers process-exit handlers, and unloading
  // it while the process lives is not supported by NVIDIA. dlopen reference-counts repeated loads.
  void* handle = dlopen(driver->library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* detail = dlerror();
    why_not = driver->library + " not found" + (detail ? std::string(" (") + detail + ")" : "");
    return nullptr;
  }
#define QV_CUDA_SYMBOL(member, symbol, params)                                               \
  driver->member = reinterpret_cast<decltype(driver->member)>(dlsym(handle, symbol));        \
  if (!driver->member) {                                                                     \
    why_not = driver->library + " has no symbol " symbol " (driver too old or not NVIDIA's)"; \
    return nullptr;                                                                          \
  }
#include "cuda_symbols.h"
#undef QV_CUDA_SYMBOL
  return driver;
}

std::string Driver::error_text(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) name = nullptr;
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) text = nullptr;
  std::string out = name ? name : "CUresult " + std::to_string(result);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

}  // namespace quiver::backend::cuda
