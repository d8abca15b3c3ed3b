// quiver::Device: choosing a backend, loading fat binaries, allocating buffers.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <string>

#include "api/impl.h"
#include "format/fatbin.h"

namespace quiver {
namespace {

// Every backend name the project defines, built into this library or not, so that a request
// for e.g. "hip" on a build without it says "not built" rather than "unknown".
constexpr std::array<std::string_view, 5> kDefinedBackends{"cuda", "hip", "metal", "vulkan", "cpu"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string registry_names() {
  std::string names;
  for (const backend::Factory& f : backend::registry()) {
    if (!names.empty()) names += ", ";
    names += f.name;
  }
  return names;
}

const detail::DeviceImpl& checked(const std::shared_ptr<detail::DeviceImpl>& impl) {
  if (!impl) throw Error(ErrorCode::InvalidArgument, "quiver::Device is empty (moved-from)");
  return *impl;
}

// A factory that throws instead of returning null is treated the same way: not available.
std::unique_ptr<backend::Device> try_open(const backend::Factory& f, std::string& why_not) {
  try {
    return f.open(why_not);
  } catch (const std::exception& e) {
    why_not = e.what();
    return nullptr;
  }
}

std::unique_ptr<backend::Device> open_explicit(const std::string& name, std::string_view origin) {
  for (const backend::Factory& f : backend::registry()) {
    if (name != f.name) continue;
    std::string why_not;
    std::unique_ptr<backend::Device> dev = try_open(f, why_not);
    if (!dev) {
      throw Error(ErrorCode::BackendUnavailable,
                  "backend '" + name + "'" + std::string(origin) + " is unavailable: " +
                      (why_not.empty() ? std::string("no device found") : why_not));
    }
    return dev;
  }
  bool defined = std::find(kDefinedBackends.begin(), kDefinedBackends.end(), name) !=
                 kDefinedBackends.end();
  if (defined) {
    throw Error(ErrorCode::BackendUnavailable,
                "backend '" + name + "'" + std::string(origin) +
                    " is not built into this libquiver; built-in backends: " + registry_names());
  }
  throw Error(ErrorCode::NotFound, "unknown backend '" + name + "'" + std::string(origin) +
                                       "; known backends: " + registry_names());
}

}  // namespace

// An explicit name wins over QUIVER_BACKEND, which wins over detection.
Device Device::open(std::string_view backend) {
  auto wrap = [](std::unique_ptr<backend::Device> dev) {
    return Device(std::make_shared<detail::DeviceImpl>(std::move(dev)));
  };
  if (!backend.empty()) return wrap(open_explicit(lower(backend), ""));
  if (const char* env = std::getenv("QUIVER_BACKEND"); env != nullptr && *env != '\0') {
    return wrap(open_explicit(lower(env), " (from QUIVER_BACKEND)"));
  }
  std::string reasons;
  for (const backend::Factory& f : backend::registry()) {
    std::string why_not;
    if (std::unique_ptr<backend::Device> dev = try_open(f, why_not)) return wrap(std::move(dev));
    reasons += std::string("; ") + f.name + ": " + (why_not.empty() ? "no device found" : why_not);
  }
  throw Error(ErrorCode::BackendUnavailable, "no quiver backend could be opened" + reasons);
}

std::vector<std::string> Device::available_backends() {
  std::vector<std::string> names;
  for (const backend::Factory& f : backend::registry()) {
    std::string why_not;
    if (try_open(f, why_not)) names.emplace_back(f.name);
  }
  return names;
}

std::string Device::backend_name() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  return d.backend().backend_name();
}

std::string Device::device_name() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  return d.backend().device_name();
}

namespace {
std::shared_ptr<detail::ModuleImpl> load_fatbin(const std::shared_ptr<detail::DeviceImpl>& impl,
                                                const format::FatBinary& fb) {
  std::unique_ptr<backend::Module> mod;
  {
    std::lock_guard lock(impl->mutex());
    mod = impl->backend().load(fb);
  }
  if (!mod) {
    throw Error(ErrorCode::DeviceError,
                "backend '" + impl->backend().backend_name() + "' returned no module for '" +
                    fb.label() + "'");
  }
  return std::make_shared<detail::ModuleImpl>(impl, std::move(mod), fb.manifest(), fb.label());
}
}  // namespace

Module Device::load(const std::string& path) const {
  checked(impl_);
  return Module(load_fatbin(impl_, format::FatBinary::read_file(path)));
}

Module Device::load(std::span<const std::byte> fatbin, std::string_view label) const {
  checked(impl_);
  return Module(load_fatbin(impl_, format::FatBinary::parse(fatbin, std::string(label))));
}

void Device::synchronize() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  d.backend().synchronize();
}

std::shared_ptr<detail::BufferImpl> Device::alloc_bytes(size_t bytes) const {
  const detail::DeviceImpl& d = checked(impl_);
  std::unique_ptr<backend::Buffer> buf;
  {
    std::lock_guard lock(d.mutex());
    buf = d.backend().alloc(bytes);
  }
  if (!buf) {
    throw Error(ErrorCode::OutOfMemory, "backend '" + d.backend().backend_name() +
                                            "' could not allocate " + std::to_string(bytes) +
                                            " bytes");
  }
  buf->bytes = bytes;
  return std::make_shared<detail::BufferImpl>(impl_, std::move(buf));
}

namespace detail {
namespace {
[[noreturn]] void throw_bytes_mismatch(const char* what, size_t got, size_t have) {
  throw Error(ErrorCode::InvalidArgument, std::string("buffer ") + what + ": " +
                                              std::to_string(got) +
                                              " bytes requested but the buffer holds " +
                                              std::to_string(have) + " bytes");
}
}  // namespace

void buffer_upload(const BufferImpl& b, const void* src, size_t bytes) {
  if (bytes > b.bytes()) throw_bytes_mismatch("upload", bytes, b.bytes());
  if (bytes == 0) return;
  std::lock_guard lock(b.device()->mutex());
  b.device()->backend().upload(b.backend(), src, bytes);
}

void buffer_download(const BufferImpl& b, void* dst, size_t bytes) {
  if (bytes > b.bytes()) throw_bytes_mismatch("download", bytes, b.bytes());
  if (bytes == 0) return;
  std::lock_guard lock(b.device()->mutex());
  b.device()->backend().download(b.backend(), dst, bytes);
}

size_t buffer_bytes(const BufferImpl& b) { return b.bytes(); }

void throw_size_mismatch(const char* what, size_t got, size_t have) {
  throw Error(ErrorCode::InvalidArgument, std::string("buffer ") + what + ": " +
                                              std::to_string(got) +
                                              " elements requested but the buffer holds " +
                                              std::to_string(have));
}

}  // namespace detail
}  // namespace quiver
