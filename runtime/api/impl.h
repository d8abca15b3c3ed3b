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
  explicit DeviceImpl(std::unique_ptr<backend::Device> device) : device_(std::move(device)) {}

  // Every call into the backend holds this lock: a quiver::Device may be shared between
  // threads, and the backends are written for one caller at a time (a CUDA context, a Vulkan
  // queue and the CPU thread pool each need serialising anyway).
  std::mutex& mutex() const { return mutex_; }
  backend::Device& backend() const { return *device_; }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<backend::Device> device_;
};

class BufferImpl {
 public:
  BufferImpl(std::shared_ptr<DeviceImpl> device, std::unique_ptr<backend::Buffer> buffer)
      : device_(std::move(device)), buffer_(std::move(buffer)) {}
  ~BufferImpl() {
    std::lock_guard lock(device_->mutex());
    buffer_.reset();
  }
  const std::shared_ptr<DeviceImpl>& device() const { return device_; }
  backend::Buffer& backend() const { return *buffer_; }
  size_t bytes() const { return buffer_->bytes; }

 private:
  std::shared_ptr<DeviceImpl> device_;
  std::unique_ptr<backend::Buffer> buffer_;
};

class ModuleImpl {
 public:
  ModuleImpl(std::shared_ptr<DeviceImpl> device, std::unique_ptr<backend::Module> module,
             format::Manifest manifest, std::string label)
      : device_(std::move(device)),
        module_(std::move(module)),
        manifest_(std::move(manifest)),
        label_(std::move(label)),
        image_(module_->image_description()) {}
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
  std::unique_ptr<backend::Module> module_;
  format::Manifest manifest_;
  std::string label_;
  std::string image_;
};

// Element type names as the kernel language spells them ("float", "int32_t", "half", ...).
std::string_view elem_name(Elem e);

}  // namespace quiver::detail
