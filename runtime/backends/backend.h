// The one interface every runtime backend implements (one folder per backend under
// runtime/backends/, one line per backend in registry.cpp). The API layer (runtime/api) checks
// launch arguments against the manifest before calling in, so backends see only valid launches.
// It also serialises every call into one backend::Device (docs/runtime.md, "Thread safety"),
// so backends are written for one caller at a time.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/fatbin.h"     // quiver::format::FatBinary (reader), Manifest
#include "quiver/runtime.h"    // quiver::Error, Grid

namespace quiver::backend {

// Foreign memory a Buffer wraps (Device::from_dlpack). Its release function runs exactly once,
// when the owner is destroyed — but only once the import has been armed: until the whole import
// has succeeded, the caller still owns the memory and a failed import must not release it.
class ExternalOwner {
 public:
  explicit ExternalOwner(std::function<void()> release) : release_(std::move(release)) {}
  ExternalOwner(const ExternalOwner&) = delete;
  ExternalOwner& operator=(const ExternalOwner&) = delete;
  ~ExternalOwner() {
    if (armed_ && release_) release_();
  }
  void arm() { armed_ = true; }

 private:
  std::function<void()> release_;
  bool armed_ = false;
};

// A device allocation. Backends derive from it; `bytes` is the size asked for.
class Buffer {
 public:
  virtual ~Buffer() = default;
  // CUdeviceptr / VkBuffer / host address of the first byte, as an integer.
  virtual uint64_t native_handle() const = 0;
  size_t bytes = 0;
  // Set by the API layer on buffers made by Device::import_memory. The API layer takes it out
  // and destroys it after the backend buffer (whose destructor waits for launches still using
  // the memory), outside the device lock: a DLPack deleter may call back into quiver.
  std::unique_ptr<ExternalOwner> external;
};

// One argument of a launch, already checked against the manifest's params[i].
struct LaunchArg {
  Buffer* buffer = nullptr;       // buffer parameter: the backend's own Buffer subclass
  const void* scalar = nullptr;   // scalar parameter: its value (bool widened to uint32, docs/abi.md)
  uint32_t scalar_size = 0;
};

// How many backend Devices and Modules exist in this process, over every backend. A Device's
// count drops when its destructor has finished, so with its driver objects and threads. For
// tests: a dropped quiver::Device must release all it owns (docs/runtime.md, "Lifetimes").
struct LiveObjects {
  size_t devices = 0;
  size_t modules = 0;
};
LiveObjects live_objects();

// The image a Module loaded, as the manifest lists it: what the API layer answers questions
// about the loaded code from (Module::has_kernel), where image_description() is text for people.
// Vulkan takes each kernel from an image of its own: `arch` lists the archs it took and
// `kernels` every kernel it has an image for.
struct ImageInfo {
  format::Target target{};
  std::string arch;
  std::vector<std::string> kernels;   // kernel symbols the image contains

  static ImageInfo of(const format::Image& image) { return {image.target, image.arch, image.kernels}; }
};

class Module {
 public:
  Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module();
  // kernel: index into the manifest's kernels. grid: blocks per dimension (each >= 1).
  virtual void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) = 0;
  // Which image was loaded, for diagnostics: "cubin sm_90", "ptx sm_80 (JIT)", "spirv", "cpu x86_64".
  virtual std::string image_description() const = 0;
  // The same image, structured. Fixed when the module is loaded.
  virtual const ImageInfo& image_info() const = 0;
};

// One launch of a recorded sequence (quiver::Device::record), checked by the API layer as every
// launch is. Its scalar arguments point into `scalars` (one 8-byte slot per argument).
struct RecordedLaunch {
  Module* module = nullptr;
  size_t kernel = 0;
  Grid grid;
  std::vector<LaunchArg> args;
  std::vector<std::array<std::byte, 8>> scalars;
};

// A recorded sequence prepared for replay. The API layer keeps the launches, and the modules
// and buffers they use, alive until the Graph is destroyed (under the device's lock).
class Graph {
 public:
  virtual ~Graph() = default;
  // Queues every launch once, in order, after the work queued before (as launches would be).
  virtual void replay() = 0;
};

class Device {
 public:
  Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  virtual ~Device();
  virtual std::string backend_name() const = 0;   // "cuda", "vulkan", "cpu"
  virtual std::string device_name() const = 0;
  // A GPU API implemented on the host's CPU (lavapipe, SwiftShader): automatic detection prefers
  // the native CPU backend, which runs the same kernels faster (docs/runtime.md).
  virtual bool emulated_on_host() const { return false; }
  virtual std::unique_ptr<Buffer> alloc(size_t bytes) = 0;
  virtual void upload(Buffer& dst, const void* src, size_t bytes) = 0;     // synchronous
  virtual void download(const Buffer& src, void* dst, size_t bytes) = 0;   // waits for prior launches
  // Picks the best image of `fatbin` for this device, decompresses only that one and loads it.
  // Throws quiver::Error(NotFound) listing the images the file has when none fits.
  virtual std::unique_ptr<Module> load(const format::FatBinary& fatbin) = 0;
  // The images load(fatbin) will read first (image_data), chosen as load chooses them; none
  // when it would throw NotFound (and none for Vulkan, which reads each image at the first launch
  // of one of its kernels). Device::load prefetches them outside the device's lock, so
  // that load's image_data calls find them decompressed and checked (FatBinary::prefetch).
  virtual std::vector<size_t> images_to_load(const format::FatBinary& fatbin) const = 0;
  virtual void synchronize() = 0;

  // Prepares `launches` for replay (they outlive the Graph). The default replays them one by
  // one through Module::launch, which is what the CPU backend wants and is exact everywhere;
  // CUDA makes a CUDA graph of them and Vulkan one command buffer, so a replay costs one
  // submission.
  virtual std::unique_ptr<Graph> build_graph(std::span<const RecordedLaunch> launches);

  // Interop (docs/runtime.md): the queue this Device submits to (CUstream / VkQueue / nullptr
  // for the CPU) and the driver object it lives in (CUcontext / VkDevice / nullptr).
  virtual void* native_stream() const = 0;
  virtual void* native_device() const = 0;

  // Device-side timing for benchmarks (Device::elapsed_ms, elapsed_ms_each): start_timer()
  // marks the current end of the queue; Timer::end() marks it again without waiting, so many
  // timers can be in flight; Timer::ms() waits for the device and returns the milliseconds
  // between the two marks (CUDA events, Vulkan timestamp queries). The default drains the queue
  // and uses the host clock: exact for the CPU backend, whose launches run synchronously, and
  // an upper bound elsewhere.
  class Timer {
   public:
    virtual ~Timer() = default;
    virtual void end() = 0;
    virtual double ms() = 0;
  };
  virtual std::unique_ptr<Timer> start_timer() {
    struct HostTimer final : Timer {
      Device* device;
      std::chrono::steady_clock::time_point start, stop;
      void end() override {
        device->synchronize();
        stop = std::chrono::steady_clock::now();
      }
      double ms() override { return std::chrono::duration<double, std::milli>(stop - start).count(); }
    };
    synchronize();
    auto t = std::make_unique<HostTimer>();
    t->device = this;
    t->start = std::chrono::steady_clock::now();
    return t;
  }
  // Wraps `bytes` of memory at `address` (a device pointer this device can use, or a host
  // pointer for the CPU) without copying; the memory is never freed by the backend. Throws
  // quiver::Error when this backend cannot use foreign memory or the address is not usable here.
  virtual std::unique_ptr<Buffer> import_memory(uint64_t address, size_t bytes) = 0;
};

// Each backend folder provides one of these; registry.cpp lists them in priority order.
struct Factory {
  const char* name;   // "cuda", "vulkan", "cpu"
  // How many devices this backend can open here. 0, with `why_not` set, when the driver library
  // is missing, unusable or too old, or reports no device.
  size_t (*count)(std::string& why_not);
  // Opens device `index`. Returns nullptr and sets `why_not` when it cannot; `device_count` is
  // set to the number of devices found (0 when the backend did not get that far), so that the
  // caller can tell a bad index from a missing driver.
  std::unique_ptr<Device> (*open)(size_t index, size_t& device_count, std::string& why_not);
};
std::span<const Factory> registry();   // CUDA > HIP > Metal > Vulkan > CPU

}  // namespace quiver::backend
