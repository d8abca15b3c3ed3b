// quiver::Device: choosing a backend and one of its devices ("cuda:1", docs/runtime.md),
// loading fat binaries, allocating buffers.
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

const backend::Factory* find_factory(const std::string& name) {
  for (const backend::Factory& f : backend::registry())
    if (name == f.name) return &f;
  return nullptr;
}

// A backend name that is not in this library: "not built" for the project's other backends,
// "unknown" for anything else.
[[noreturn]] void throw_no_such_backend(const std::string& name, std::string_view origin) {
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

// "cuda" -> {cuda, 0}; "cuda:1" -> {cuda, 1}. Names are case-insensitive.
struct Selector {
  std::string backend;
  size_t index = 0;
};

Selector parse_selector(std::string_view text, std::string_view origin) {
  Selector sel;
  const size_t colon = text.find(':');
  sel.backend = lower(text.substr(0, colon));
  auto bad = [&](const std::string& why) {
    throw Error(ErrorCode::InvalidArgument, "device selector '" + std::string(text) + "'" +
                                                std::string(origin) + ": " + why +
                                                " (write a backend name, optionally with a device "
                                                "index: 'cuda', 'cuda:1', 'cpu:0')");
  };
  if (sel.backend.empty()) bad("no backend name");
  if (colon == std::string_view::npos) return sel;
  const std::string_view digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 9) bad("the device index must be a decimal number of 1 to 9 digits");
  size_t index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') bad("the device index must be a decimal number");
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  sel.index = index;
  return sel;
}

// Factories that throw instead of returning null are treated the same way: not available.
size_t try_count(const backend::Factory& f, std::string& why_not) {
  try {
    return f.count(why_not);
  } catch (const std::exception& e) {
    why_not = e.what();
    return 0;
  }
}

std::unique_ptr<backend::Device> try_open(const backend::Factory& f, size_t index, size_t& device_count,
                                          std::string& why_not) {
  device_count = 0;
  try {
    return f.open(index, device_count, why_not);
  } catch (const std::exception& e) {
    why_not = e.what();
    return nullptr;
  }
}

std::string device_range(const std::string& backend, size_t count) {
  if (count == 1) return "1 device (" + backend + ":0)";
  return std::to_string(count) + " devices (" + backend + ":0 to " + backend + ":" +
         std::to_string(count - 1) + ")";
}

std::unique_ptr<backend::Device> open_explicit(const Selector& sel, std::string_view origin) {
  const backend::Factory* f = find_factory(sel.backend);
  if (f == nullptr) throw_no_such_backend(sel.backend, origin);
  std::string why_not;
  size_t device_count = 0;
  std::unique_ptr<backend::Device> dev = try_open(*f, sel.index, device_count, why_not);
  if (dev) return dev;
  const std::string name = "backend '" + sel.backend + "'" + std::string(origin);
  if (device_count > 0 && sel.index >= device_count) {
    throw Error(ErrorCode::NotFound, name + " has no device " + std::to_string(sel.index) + ": it has " +
                                         device_range(sel.backend, device_count));
  }
  if (device_count > 0) {
    throw Error(ErrorCode::BackendUnavailable,
                name + ": device " + std::to_string(sel.index) + " could not be opened: " +
                    (why_not.empty() ? std::string("no reason given") : why_not));
  }
  throw Error(ErrorCode::BackendUnavailable,
              name + " is unavailable: " + (why_not.empty() ? std::string("no device found") : why_not));
}

}  // namespace

// An explicit name wins over QUIVER_BACKEND, which wins over detection.
Device Device::open(std::string_view backend) {
  auto wrap = [](std::unique_ptr<backend::Device> dev, size_t index) {
    return Device(std::make_shared<detail::DeviceImpl>(std::move(dev), index));
  };
  if (!backend.empty()) {
    const Selector sel = parse_selector(backend, "");
    return wrap(open_explicit(sel, ""), sel.index);
  }
  if (const char* env = std::getenv("QUIVER_BACKEND"); env != nullptr && *env != '\0') {
    const Selector sel = parse_selector(env, " (from QUIVER_BACKEND)");
    return wrap(open_explicit(sel, " (from QUIVER_BACKEND)"), sel.index);
  }
  // Detection: device 0 of the first backend that opens; each failure's reason is kept. A device
  // that emulates a GPU on the host (lavapipe) is taken only when no later backend opens: the
  // native CPU backend runs the same kernels faster. QUIVER_BACKEND=vulkan still selects it.
  std::string reasons;
  std::unique_ptr<backend::Device> emulated;
  for (const backend::Factory& f : backend::registry()) {
    std::string why_not;
    size_t device_count = 0;
    std::unique_ptr<backend::Device> dev = try_open(f, 0, device_count, why_not);
    if (dev && dev->emulated_on_host()) {
      if (!emulated) emulated = std::move(dev);
      continue;
    }
    if (dev) return wrap(std::move(dev), 0);
    reasons += std::string("; ") + f.name + ": " + (why_not.empty() ? "no device found" : why_not);
  }
  if (emulated) return wrap(std::move(emulated), 0);
  throw Error(ErrorCode::BackendUnavailable, "no quiver backend could be opened" + reasons);
}

std::vector<std::string> Device::available_backends() {
  std::vector<std::string> names;
  for (const backend::Factory& f : backend::registry()) {
    std::string why_not;
    size_t device_count = 0;
    if (try_open(f, 0, device_count, why_not)) names.emplace_back(f.name);
  }
  return names;
}

size_t Device::count(std::string_view backend) {
  const std::string name = lower(backend);
  if (name.find(':') != std::string::npos) {
    throw Error(ErrorCode::InvalidArgument, "Device::count('" + std::string(backend) +
                                                "'): give a backend name without a device index");
  }
  const backend::Factory* f = find_factory(name);
  if (f == nullptr) {
    const bool defined = std::find(kDefinedBackends.begin(), kDefinedBackends.end(), name) !=
                         kDefinedBackends.end();
    if (defined) return 0;   // a backend of the project that this library was built without
    throw_no_such_backend(name, "");
  }
  std::string why_not;
  return try_count(*f, why_not);
}

size_t Device::index() const { return checked(impl_).index(); }

void* Device::native_stream() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  return d.backend().native_stream();
}

namespace {
// Timers are backend objects: made, ended, read and destroyed under the device's lock.
struct Timers {
  const detail::DeviceImpl& d;
  std::vector<std::unique_ptr<backend::Device::Timer>> list;
  ~Timers() {
    std::lock_guard lock(d.mutex());
    list.clear();
  }
};
}  // namespace

double Device::elapsed_ms(const std::function<void()>& work) const {
  return elapsed_ms_each(1, [&](size_t) { work(); })[0];
}

std::vector<double> Device::elapsed_ms_each(size_t runs, const std::function<void(size_t)>& work) const {
  const detail::DeviceImpl& d = checked(impl_);
  Timers timers{d, {}};
  timers.list.reserve(runs);
  for (size_t i = 0; i < runs; ++i) {
    {
      std::lock_guard lock(d.mutex());
      d.refuse_while_recording("Device::elapsed_ms");
      timers.list.push_back(d.backend().start_timer());
    }
    work(i);   // its launches take the lock themselves
    std::lock_guard lock(d.mutex());
    timers.list.back()->end();
  }
  std::vector<double> ms;
  ms.reserve(runs);
  std::lock_guard lock(d.mutex());
  for (auto& t : timers.list) ms.push_back(t->ms());
  return ms;
}

void* Device::native_device() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  return d.backend().native_device();
}

std::string Device::backend_name() const { return checked(impl_).backend_name(); }

std::string Device::device_name() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  return d.backend().device_name();
}

void detail::ModuleContents::index_kernels() {
  std::vector<std::string> symbols = image_info.kernels;
  std::sort(symbols.begin(), symbols.end());
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const bool in_image = std::binary_search(symbols.begin(), symbols.end(), manifest.kernels[i].symbol);
    kernels_by_name_.emplace(manifest.kernels[i].name, KernelEntry{i, in_image});   // the first of a name
  }
}

namespace {
// Under the device's lock: choosing the images and loading them into the backend. Outside it:
// verifying and decompressing them (docs/runtime.md, "Thread safety"), which for a large image
// takes far longer than the rest, and must not stall other threads' launches.
std::shared_ptr<detail::ModuleContents> load_contents(const detail::DeviceImpl& impl, format::FatBinary fb) {
  std::vector<size_t> images;
  {
    std::lock_guard lock(impl.mutex());
    images = impl.backend().images_to_load(fb);
  }
  for (size_t index : images) fb.prefetch(index);
  auto contents = std::make_shared<detail::ModuleContents>();
  contents->manifest = fb.manifest();
  contents->label = fb.label();
  {
    // Loaded under the lock; the contents' holders (ModuleImpl, DeviceImpl) release the backend
    // module under it too.
    std::lock_guard lock(impl.mutex());
    contents->adopt(impl.backend().load(fb));
  }
  if (!contents->module) {
    throw Error(ErrorCode::DeviceError,
                "backend '" + impl.backend_name() + "' returned no module for '" + fb.label() + "'");
  }
  return contents;
}
}  // namespace

Module Device::load(const std::string& path) const {
  checked(impl_);
  return Module(std::make_shared<detail::ModuleImpl>(impl_, load_contents(*impl_, format::FatBinary::read_file(path))));
}

Module Device::load(std::span<const std::byte> fatbin, std::string_view label) const {
  checked(impl_);
  // The FatBinary lives for this call only (backends keep what they load), so it reads the
  // caller's bytes in place.
  return Module(std::make_shared<detail::ModuleImpl>(
      impl_, load_contents(*impl_, format::FatBinary::view(fatbin, std::string(label)))));
}

namespace detail {
std::shared_ptr<ModuleContents> DeviceImpl::loaded_once(std::span<const std::byte> fatbin,
                                                        const std::function<std::shared_ptr<ModuleContents>()>& load) {
  std::array<std::byte, kIdentityBytes> head{};
  std::copy_n(fatbin.begin(), std::min(fatbin.size(), kIdentityBytes), head.begin());
  std::lock_guard lock(loaded_once_mutex_);
  for (const LoadedOnce& entry : loaded_once_)
    if (entry.data == fatbin.data() && entry.size == fatbin.size() && entry.head == head) return entry.contents;
  std::shared_ptr<ModuleContents> contents = load();
  try {
    loaded_once_.push_back(LoadedOnce{fatbin.data(), fatbin.size(), head, contents});
  } catch (...) {
    std::lock_guard device_lock(mutex_);   // the backend module goes under the device's lock
    contents.reset();
    throw;
  }
  return contents;
}

Module load_cached(const Device& device, std::span<const std::byte> fatbin, std::string_view label) {
  const std::shared_ptr<DeviceImpl>& impl = device.impl();
  checked(impl);
  return Module(std::make_shared<ModuleImpl>(impl, impl->loaded_once(fatbin, [&] {
    return load_contents(*impl, format::FatBinary::view(fatbin, std::string(label)));
  })));
}
}  // namespace detail

void Device::synchronize() const {
  const detail::DeviceImpl& d = checked(impl_);
  std::lock_guard lock(d.mutex());
  d.refuse_while_recording("Device::synchronize");
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
    throw Error(ErrorCode::OutOfMemory, "backend '" + d.backend_name() +
                                            "' could not allocate " + std::to_string(bytes) +
                                            " bytes");
  }
  buf->bytes = bytes;
  return std::make_shared<detail::BufferImpl>(impl_, std::move(buf), detail::kOwnBufferAlignment);
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
  b.device()->refuse_while_recording("a buffer upload");
  b.device()->backend().upload(b.backend(), src, bytes);
}

void buffer_download(const BufferImpl& b, void* dst, size_t bytes) {
  if (bytes > b.bytes()) throw_bytes_mismatch("download", bytes, b.bytes());
  if (bytes == 0) return;
  std::lock_guard lock(b.device()->mutex());
  b.device()->refuse_while_recording("a buffer download");
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
