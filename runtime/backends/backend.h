// The one interface every runtime backend implements (one folder per backend under
// runtime/backends/, one line per backend in registry.cpp). The API layer (runtime/api) checks
// launch arguments against the manifest before calling in, so backends see only valid launches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/fatbin.h"     // quiver::format::FatBinary (reader), Manifest
#include "quiver/runtime.h"    // quiver::Error, Grid

namespace quiver::backend {

// A device allocation. Backends derive from it; `bytes` is the size asked for.
class Buffer {
 public:
  virtual ~Buffer() = default;
  size_t bytes = 0;
};

// One argument of a launch, already checked against the manifest's params[i].
struct LaunchArg {
  Buffer* buffer = nullptr;       // buffer parameter: the backend's own Buffer subclass
  const void* scalar = nullptr;   // scalar parameter: its value (bool widened to uint32, docs/abi.md)
  uint32_t scalar_size = 0;
};

class Module {
 public:
  virtual ~Module() = default;
  // kernel: index into the manifest's kernels. grid: blocks per dimension (each >= 1).
  virtual void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) = 0;
  // Which image was loaded, for diagnostics: "cubin sm_90", "ptx sm_80 (JIT)", "spirv", "cpu x86_64".
  virtual std::string image_description() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string backend_name() const = 0;   // "cuda", "vulkan", "cpu"
  virtual std::string device_name() const = 0;
  virtual std::unique_ptr<Buffer> alloc(size_t bytes) = 0;
  virtual void upload(Buffer& dst, const void* src, size_t bytes) = 0;     // synchronous
  virtual void download(const Buffer& src, void* dst, size_t bytes) = 0;   // waits for prior launches
  // Picks the best image of `fatbin` for this device, decompresses only that one and loads it.
  // Throws quiver::Error(NotFound) listing the images the file has when none fits.
  virtual std::unique_ptr<Module> load(const format::FatBinary& fatbin) = 0;
  virtual void synchronize() = 0;
};

// Each backend folder provides one of these; registry.cpp lists them in priority order.
struct Factory {
  const char* name;   // "cuda", "vulkan", "cpu"
  // Returns nullptr and sets `why_not` when the driver library or a device is missing.
  std::unique_ptr<Device> (*open)(std::string& why_not);
};
std::span<const Factory> registry();   // CUDA > HIP > Metal > Vulkan > CPU

}  // namespace quiver::backend
