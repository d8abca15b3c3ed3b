// The C API (include/quiver/quiver.h): thin wrappers over the C++ API that turn exceptions into
// status codes and a per-thread message. Argument checks happen in Kernel::launch_packed, so
// C and C++ callers get the same diagnostics.
#include "quiver/quiver.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "api/impl.h"
#include "format/manifest.h"

struct qv_device_t {
  quiver::Device device;
};
struct qv_module_t {
  quiver::Module module;
};
struct qv_buffer_t {
  std::shared_ptr<quiver::detail::BufferImpl> impl;
  qv_type type;
  size_t count;
};
struct qv_kernel_t {
  quiver::Kernel kernel;
};

namespace {

thread_local std::string g_last_error;

static_assert(int(QV_ERROR_INVALID_ARGUMENT) == int(quiver::ErrorCode::InvalidArgument));
static_assert(int(QV_ERROR_INVALID_FAT_BINARY) == int(quiver::ErrorCode::InvalidFatBinary));
static_assert(int(QV_ERROR_NOT_FOUND) == int(quiver::ErrorCode::NotFound));
static_assert(int(QV_ERROR_BACKEND_UNAVAILABLE) == int(quiver::ErrorCode::BackendUnavailable));
static_assert(int(QV_ERROR_DEVICE) == int(quiver::ErrorCode::DeviceError));
static_assert(int(QV_ERROR_OUT_OF_MEMORY) == int(quiver::ErrorCode::OutOfMemory));
static_assert(int(QV_TYPE_F64) == int(quiver::detail::Elem::F64));
static_assert(int(QV_TYPE_BF16) == int(quiver::detail::Elem::BF16));

qv_status fail(qv_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

// Runs `body`, mapping every exception to a status; nothing escapes into C callers.
template <typename F>
qv_status guarded(const char* function, F&& body) {
  try {
    body();
    return QV_SUCCESS;
  } catch (const quiver::Error& e) {
    return fail(static_cast<qv_status>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(QV_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(QV_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(QV_ERROR_INTERNAL, std::string(function) + ": unknown exception");
  }
}

[[noreturn]] void invalid(const std::string& message) {
  throw quiver::Error(quiver::ErrorCode::InvalidArgument, message);
}

template <typename T>
T* require(T* handle, const char* function, const char* what) {
  if (handle == nullptr) invalid(std::string(function) + ": " + what + " is NULL");
  return handle;
}

template <typename E>
int raw_enum(const E& field) {
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &field, sizeof raw);
  return static_cast<int>(raw);
}

bool valid_type(int t) { return t >= QV_TYPE_BOOL && t <= QV_TYPE_F64; }

void copy_name(const std::string& s, char* out, size_t capacity, const char* function) {
  if (out == nullptr || capacity == 0) invalid(std::string(function) + ": name buffer is NULL or empty");
  const size_t n = std::min(s.size(), capacity - 1);
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" {

const char* qv_last_error_message(void) { return g_last_error.c_str(); }

qv_status qv_device_open(const char* backend, qv_device* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(out, fn, "out");
    auto dev = std::make_unique<qv_device_t>(qv_device_t{quiver::Device::open(backend ? backend : "")});
    *out = dev.release();
  });
}

qv_status qv_device_close(qv_device dev) {
  const char* fn = __func__;
  return guarded(fn, [&] { delete require(dev, fn, "device"); });
}

qv_status qv_device_synchronize(qv_device dev) {
  const char* fn = __func__;
  return guarded(fn, [&] { require(dev, fn, "device")->device.synchronize(); });
}

qv_status qv_device_backend_name(qv_device dev, char* name, size_t capacity) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    copy_name(require(dev, fn, "device")->device.backend_name(), name, capacity, fn);
  });
}

qv_status qv_device_name(qv_device dev, char* name, size_t capacity) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    copy_name(require(dev, fn, "device")->device.device_name(), name, capacity, fn);
  });
}

qv_status qv_device_count(const char* backend, size_t* count) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(backend, fn, "backend");
    *require(count, fn, "count") = quiver::Device::count(backend);
  });
}

qv_status qv_device_index(qv_device dev, size_t* index) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    *require(index, fn, "index") = dev->device.index();
  });
}

qv_status qv_device_native_stream(qv_device dev, void** stream) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    *require(stream, fn, "stream") = dev->device.native_stream();
  });
}

qv_status qv_device_native_device(qv_device dev, void** device) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    *require(device, fn, "out") = dev->device.native_device();
  });
}

qv_status qv_module_load_file(qv_device dev, const char* path, qv_module* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    require(path, fn, "path");
    require(out, fn, "out");
    auto mod = std::make_unique<qv_module_t>(qv_module_t{dev->device.load(std::string(path))});
    *out = mod.release();
  });
}

qv_status qv_module_load_memory(qv_device dev, const void* bytes, size_t size, const char* label,
                                qv_module* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    require(out, fn, "out");
    if (bytes == nullptr && size != 0) invalid(std::string(fn) + ": bytes is NULL");
    std::span<const std::byte> data(static_cast<const std::byte*>(bytes), size);
    auto mod = std::make_unique<qv_module_t>(
        qv_module_t{dev->device.load(data, label ? label : "<memory>")});
    *out = mod.release();
  });
}

qv_status qv_module_free(qv_module mod) {
  const char* fn = __func__;
  return guarded(fn, [&] { delete require(mod, fn, "module"); });
}

qv_status qv_buffer_alloc(qv_device dev, qv_type type, size_t count, qv_buffer* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    require(out, fn, "out");
    if (!valid_type(raw_enum(type))) invalid(std::string(fn) + ": invalid qv_type " + std::to_string(raw_enum(type)));
    const size_t elem = quiver::format::size_of(static_cast<quiver::format::ScalarType>(type));
    if (count > SIZE_MAX / elem) invalid(std::string(fn) + ": " + std::to_string(count) + " elements overflow size_t");
    auto buf = std::make_unique<qv_buffer_t>(qv_buffer_t{dev->device.alloc_bytes(count * elem), type, count});
    *out = buf.release();
  });
}

qv_status qv_buffer_upload(qv_buffer buf, const void* src, size_t bytes) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(buf, fn, "buffer");
    if (src == nullptr && bytes != 0) invalid(std::string(fn) + ": src is NULL");
    quiver::detail::buffer_upload(*buf->impl, src, bytes);
  });
}

qv_status qv_buffer_download(qv_buffer buf, void* dst, size_t bytes) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(buf, fn, "buffer");
    if (dst == nullptr && bytes != 0) invalid(std::string(fn) + ": dst is NULL");
    quiver::detail::buffer_download(*buf->impl, dst, bytes);
  });
}

qv_status qv_buffer_count(qv_buffer buf, size_t* count) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(buf, fn, "buffer");
    *require(count, fn, "count") = buf->count;
  });
}

qv_status qv_buffer_free(qv_buffer buf) {
  const char* fn = __func__;
  return guarded(fn, [&] { delete require(buf, fn, "buffer"); });
}

qv_status qv_buffer_native_handle(qv_buffer buf, uint64_t* handle) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(buf, fn, "buffer");
    *require(handle, fn, "handle") = quiver::detail::buffer_native_handle(buf->impl.get());
  });
}

qv_status qv_buffer_to_dlpack(qv_buffer buf, struct DLManagedTensor** out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(buf, fn, "buffer");
    require(out, fn, "out");
    *out = quiver::detail::buffer_to_dlpack(buf->impl, static_cast<quiver::detail::Elem>(buf->type), buf->count);
  });
}

qv_status qv_buffer_from_dlpack(qv_device dev, struct DLManagedTensor* tensor, qv_buffer* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(dev, fn, "device");
    require(out, fn, "out");
    quiver::detail::Elem elem{};
    size_t count = 0;
    // The qv_buffer_t is allocated first, so nothing can fail once the tensor is owned.
    auto buf = std::make_unique<qv_buffer_t>();
    buf->impl = quiver::detail::buffer_from_dlpack(dev->device.impl(), tensor, nullptr, elem, count);
    buf->type = static_cast<qv_type>(elem);
    buf->count = count;
    *out = buf.release();
  });
}

qv_status qv_kernel_get(qv_module mod, const char* name, qv_kernel* out) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(mod, fn, "module");
    require(name, fn, "name");
    require(out, fn, "out");
    auto k = std::make_unique<qv_kernel_t>(qv_kernel_t{mod->module.kernel(name)});
    *out = k.release();
  });
}

qv_status qv_kernel_launch(qv_kernel kernel, const uint32_t grid[3], const qv_arg* args,
                           size_t arg_count) {
  const char* fn = __func__;
  return guarded(fn, [&] {
    require(kernel, fn, "kernel");
    require(grid, fn, "grid");
    if (args == nullptr && arg_count != 0) invalid(std::string(fn) + ": args is NULL");
    const std::string where = "kernel '" + kernel->kernel.name() + "': ";
    std::vector<quiver::detail::Arg> packed(arg_count);
    for (size_t i = 0; i < arg_count; ++i) {
      const qv_arg& a = args[i];
      const std::string arg_name = "argument " + std::to_string(i + 1);
      // C callers may store any int in these enum fields; read them as ints so an invalid
      // value is reported rather than being undefined behaviour in C++.
      const int kind = raw_enum(a.kind);
      const int type = raw_enum(a.type);
      if (kind == QV_ARG_BUFFER) {
        if (a.buffer == nullptr) invalid(where + arg_name + ": qv_buffer is NULL");
        packed[i].is_buffer = true;
        packed[i].elem = static_cast<quiver::detail::Elem>(a.buffer->type);
        packed[i].buffer = a.buffer->impl.get();
      } else if (kind == QV_ARG_SCALAR) {
        if (!valid_type(type)) invalid(where + arg_name + ": invalid qv_type " + std::to_string(type));
        packed[i].elem = static_cast<quiver::detail::Elem>(type);
        std::memcpy(packed[i].scalar, a.scalar.bytes, sizeof packed[i].scalar);
      } else {
        invalid(where + arg_name + ": invalid qv_arg_kind " + std::to_string(kind));
      }
    }
    kernel->kernel.launch_packed(quiver::Grid{grid[0], grid[1], grid[2]}, packed);
  });
}

qv_status qv_kernel_free(qv_kernel kernel) {
  const char* fn = __func__;
  return guarded(fn, [&] { delete require(kernel, fn, "kernel"); });
}

}  // extern "C"
