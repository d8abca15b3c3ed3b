// The objects behind the public handles of include/quiver/runtime.h. Each public class holds a
// shared_ptr to one of these, so a Buffer or Module keeps its Device alive however the user
// orders destruction (the C API relies on this too). Nothing else holds a DeviceImpl: the
// per-device module cache lives inside it, so the backend is released with the last handle
// (docs/runtime.md, "Lifetimes").
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "format/manifest.h"
#include "quiver/runtime.h"

namespace quiver::detail {

// What loading a fat binary produced: the backend's module and what the API layer reads of the
// fat binary. It does not hold the Device, so that the Device's own module cache can hold it
// without keeping the Device alive. Its backend module must be destroyed under the device's
// lock and before the device's backend (ModuleImpl and DeviceImpl see to both).
struct ModuleContents {
  std::unique_ptr<backend::Module> module;
  format::Manifest manifest;
  std::string label;
  std::string image;                 // the backend's description of the image it loaded, for people
  backend::ImageInfo image_info;     // the same image, structured: what has_kernel reads

  // Takes the module the backend loaded and what it says of its image (under the device's
  // lock, as every call into the backend).
  void adopt(std::unique_ptr<backend::Module> loaded) {
    module = std::move(loaded);
    if (!module) return;
    image = module->image_description();
    image_info = module->image_info();
    index_kernels();
  }

  // The kernel of canonical name `name`: its manifest index, and whether the loaded image has it
  // (QV_TARGETS leaves some out of some images). Every op call looks its kernels up by name (the
  // op library holds hundreds), so by a map.
  struct KernelEntry {
    size_t index;
    bool in_image;
  };
  const KernelEntry* find_kernel(std::string_view name) const {
    auto it = kernels_by_name_.find(name);
    return it == kernels_by_name_.end() ? nullptr : &it->second;
  }

 private:
  void index_kernels();   // from the manifest and image_info (device.cpp)
  std::map<std::string, KernelEntry, std::less<>> kernels_by_name_;
};

class DeviceImpl {
 public:
  DeviceImpl(std::unique_ptr<backend::Device> device, size_t index)
      : device_(std::move(device)), index_(index), backend_name_(device_->backend_name()) {}
  // Nothing else can hold the cached modules now (a Module holds its DeviceImpl), so they go
  // first, under the lock their backend modules are always destroyed under, then the backend.
  ~DeviceImpl() {
    std::lock_guard lock(mutex_);
    loaded_once_.clear();
  }
  DeviceImpl(const DeviceImpl&) = delete;
  DeviceImpl& operator=(const DeviceImpl&) = delete;

  // Every call into the backend holds this lock: a quiver::Device may be shared between
  // threads, and the backends are written for one caller at a time (a CUDA context, a Vulkan
  // queue and the CPU thread pool each need serialising anyway). docs/runtime.md, "Thread safety".
  std::mutex& mutex() const { return mutex_; }
  backend::Device& backend() const { return *device_; }
  size_t index() const { return index_; }                         // the N of "cuda:N"
  const std::string& backend_name() const { return backend_name_; }   // immutable: no lock needed
  std::string selector() const { return backend_name_ + ":" + std::to_string(index_); }

  // The contents of `fatbin` loaded on this device by `load` on the first request, the same
  // contents on later ones (detail::load_cached: quiverc's generated load(), quiver::ops).
  // Thread-safe; concurrent first requests load once.
  std::shared_ptr<ModuleContents> loaded_once(std::span<const std::byte> fatbin,
                                              const std::function<std::shared_ptr<ModuleContents>()>& load);

  // Device::record: the Graph the calling thread is recording on this device, or null. Under
  // mutex_ (set and cleared by Device::record under it).
  GraphImpl* recording_here() const {
    return recording_ != nullptr && recording_thread_ == std::this_thread::get_id() ? recording_ : nullptr;
  }
  // Throws InvalidArgument when the calling thread records on this device: `what` (an upload,
  // a download, ...) would run now, not at the replay. Under mutex_.
  void refuse_while_recording(const char* what) const;
  // Device::record's start and end on the calling thread (under mutex_). One recording at a
  // time per device: a second, from any thread, throws InvalidArgument.
  void begin_recording(GraphImpl* graph) const;
  void end_recording() const { recording_ = nullptr; }

 private:
  // A fat binary is known by where its bytes are, how many there are, and its first 64 bytes:
  // the format's header, whose checksums cover the manifest and through it every image, so
  // another fat binary mapped at the same address later (a library unloaded and another
  // loaded) is not mistaken for it.
  static constexpr size_t kIdentityBytes = 64;
  struct LoadedOnce {
    const std::byte* data;
    size_t size;
    std::array<std::byte, kIdentityBytes> head;
    std::shared_ptr<ModuleContents> contents;
  };

  mutable std::mutex mutex_;
  std::unique_ptr<backend::Device> device_;
  size_t index_;
  std::string backend_name_;
  // Taken before mutex_ (a first request loads while holding it), never after.
  std::mutex loaded_once_mutex_;
  std::vector<LoadedOnce> loaded_once_;
  mutable GraphImpl* recording_ = nullptr;
  mutable std::thread::id recording_thread_;
};

class BufferImpl : public std::enable_shared_from_this<BufferImpl> {
 public:
  // `alignment`: a power of two the buffer's address is known to be a multiple of (the launch
  // checker compares it with what vector parameters need).
  BufferImpl(std::shared_ptr<DeviceImpl> device, std::unique_ptr<backend::Buffer> buffer, size_t alignment)
      : device_(std::move(device)), buffer_(std::move(buffer)), alignment_(alignment) {}
  ~BufferImpl() {
    std::unique_ptr<backend::ExternalOwner> external;
    {
      std::lock_guard lock(device_->mutex());
      external = std::move(buffer_->external);
      buffer_.reset();   // waits for launches that may still use the memory
    }
    // Outside the lock: a DLPack deleter may release a quiver buffer of this same device.
    external.reset();
  }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  backend::Buffer& backend() const { return *buffer_; }
  size_t bytes() const { return buffer_->bytes; }
  size_t alignment() const { return alignment_; }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::unique_ptr<backend::Buffer> buffer_;
  size_t alignment_;
};

// What every backend's own allocations are aligned to at least (CPU 64, CUDA 256, Vulkan
// binds at offset 0 of its own VkBuffer).
constexpr size_t kOwnBufferAlignment = 64;

class ModuleImpl {
 public:
  ModuleImpl(std::shared_ptr<DeviceImpl> device, std::shared_ptr<const ModuleContents> contents)
      : device_(std::move(device)), contents_(std::move(contents)) {}
  ~ModuleImpl() {
    // The last holder of uncached contents unloads the backend module here, under the lock.
    std::lock_guard lock(device_->mutex());
    contents_.reset();
  }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  backend::Module& backend() const { return *contents_->module; }
  const format::Manifest& manifest() const { return contents_->manifest; }
  const std::string& label() const { return contents_->label; }
  const std::string& image() const { return contents_->image; }
  const backend::ImageInfo& image_info() const { return contents_->image_info; }
  const ModuleContents& contents() const { return *contents_; }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::shared_ptr<const ModuleContents> contents_;
};

// A recorded launch sequence (Device::record) and what it holds alive: the modules and buffers
// its launches use (so a Graph outlives the handles it was recorded with) and, through them,
// the Device. The backend's graph goes first, under the device's lock, as every backend object.
class GraphImpl {
 public:
  explicit GraphImpl(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}
  ~GraphImpl() {
    std::lock_guard lock(device_->mutex());
    graph_.reset();
  }
  GraphImpl(const GraphImpl&) = delete;
  GraphImpl& operator=(const GraphImpl&) = delete;

  // One checked launch (Kernel::launch_packed, under the device's lock).
  void add(const std::shared_ptr<ModuleImpl>& module, size_t kernel, Grid grid, std::span<const Arg> args,
           std::span<const backend::LaunchArg> packed);
  // Hands the launches to the backend (under the device's lock); then replay() may run.
  void build() { graph_ = device_->backend().build_graph(launches_); }
  void replay() const;
  size_t launch_count() const { return launches_.size(); }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::vector<std::shared_ptr<ModuleImpl>> modules_;
  std::vector<std::shared_ptr<const BufferImpl>> buffers_;
  std::vector<backend::RecordedLaunch> launches_;
  std::unique_ptr<backend::Graph> graph_;
};

// Element type names as the kernel language spells them ("float", "int32_t", "half", ...).
std::string_view elem_name(Elem e);

}  // namespace quiver::detail
