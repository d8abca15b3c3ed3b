#include "hsa_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace quiver::backend::hsa {

std::shared_ptr<const Api> Api::load(std::string& why_not) {
  auto api = std::make_shared<Api>();
  const char* override_name = std::getenv("QUIVER_HSA_LIBRARY");
  api->library = override_name && *override_name ? override_name : "libhsa-runtime64.so.1";

  // Never dlclose()d: the runtime starts threads and registers exit handlers of its own.
  void* handle = dlopen(api->library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* detail = dlerror();
    why_not = api->library + " not found" + (detail ? std::string(" (") + detail + ")" : "");
    return nullptr;
  }
#define QV_HSA_SYMBOL(result, name, params)                                                        \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(handle, #name));                         \
  if (!api->name) {                                                                                \
    why_not = api->library + " has no symbol " #name " (not an HSA 1.1 runtime such as ROCm's)";   \
    return nullptr;                                                                                \
  }
#include "hsa_symbols.h"
#undef QV_HSA_SYMBOL
  return api;
}

std::string Api::error_text(hsa_status_t status) const {
  const char* text = nullptr;
  char code[32];
  std::snprintf(code, sizeof code, "hsa_status_t 0x%x", static_cast<unsigned>(status));
  if (hsa_status_string && hsa_status_string(status, &text) == HSA_STATUS_SUCCESS && text)
    return std::string(code) + " (" + text + ")";
  return code;
}

}  // namespace quiver::backend::hsa
