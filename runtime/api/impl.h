// The objects behind the public handles of include/quiver/runtime.h. Each public class holds a
// shared_ptr to one of these, so a Buffer or Module keeps its Device alive however the user
// orders destruction (the C API relies on this too).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backends/backend.h"
#include "format/manifest.h"
#include "quiver/runtime.h"

namespace quiver::detail {

class DeviceImpl {
 public:
  DeviceImpl(std::unique_ptr<backend::Device> device, size_t index)
      : device_(std::move(device)), index_(index), backend_name_(device_->backend_name()) {}

  // Every call into the backend holds this lock: a quiver::Device may be shared between
  // threads, and the backends are written for one caller at a time (a CUDA context, a Vulkan
  // queue and the CPU thread pool each need serialising anyway). docs/runtime.md, "Thread safety".
  std::mutex& mutex() const { return mutex_; }
  backend::Device& backend() const { return *device_; }
  size_t index() const { return index_; }                         // the N of "cuda:N"
  const std::string& backend_name() const { return backend_name_; }   // immutable: no lock needed
  std::string selector() const { return backend_name_ + ":" + std::to_string(index_); }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<backend::Device> device_;
  size_t index_;
  std::string backend_name_;
};

class BufferImpl {
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
  // Takes `module` only once nothing else can throw (module_ is the last member): a backend
  // module must be destroyed under the device's lock, which the caller holds when this throws
  // and ~ModuleImpl takes otherwise.
  ModuleImpl(std::shared_ptr<DeviceImpl> device, std::unique_ptr<backend::Module>&& module,
             const format::Manifest& manifest, std::string label, std::string image)
      : device_(std::move(device)),
        manifest_(manifest),
        label_(std::move(label)),
        image_(std::move(image)),
        module_(std::move(module)) {}
  ~ModuleImpl() {
    std::lock_guard lock(device_->mutex());
    module_.reset();
  }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  backend::Module& backend() const { return *module_; }
  const format::Manifest& manifest() const { return manifest_; }
  const std::string& label() const { return label_; }
  const std::string& image() const { return image_; }

 private:
  std::shared_ptr<DeviceImpl> device_;
  format::Manifest manifest_;
  std::string label_;
  std::string image_;
  std::unique_ptr<backend::Module> module_;
};

// Element type names as the kernel language spells them ("float", "int32_t", "half", ...).
std::string_view elem_name(Elem e);

}  // namespace quiver::detail
