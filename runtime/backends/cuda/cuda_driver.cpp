#include "cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

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
  // The version first: an old driver lacks some of the newer (_v2) entry points, and "too old"
  // says more than the first missing symbol would.
  using GetVersion = CUresult (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cuDriverGetVersion"));
  if (!get_version) {
    why_not = driver->library + " has no symbol cuDriverGetVersion (not NVIDIA's CUDA driver library)";
    return nullptr;
  }
  if (CUresult r = get_version(&driver->version); r != CUDA_SUCCESS) {
    why_not = driver->library + ": cuDriverGetVersion failed with CUresult " + std::to_string(r);
    return nullptr;
  }
  if (driver->version < kMinDriverVersion) {
    why_not = "the CUDA driver (" + driver->library + ") is version " + driver_version_string(driver->version) +
              ", too old: quiver needs a driver for CUDA " + driver_version_string(kMinDriverVersion) +
              " or newer (its PTX images use PTX ISA 7.8)";
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
  driver->cuLaunchKernelEx = reinterpret_cast<decltype(driver->cuLaunchKernelEx)>(dlsym(handle, "cuLaunchKernelEx"));
  return driver;
}

std::string driver_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
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
