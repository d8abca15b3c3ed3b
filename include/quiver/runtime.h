// quiver runtime: load a fat binary (.qfb), pick the best backend, launch kernels.
// See README.md and docs/abi.md. Every failure throws quiver::Error naming the file, kernel or
// argument at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// DLPack's tensor (https://dmlc.github.io/dlpack): Buffer::to_dlpack / Device::from_dlpack take
// and give pointers to it. Include <dlpack/dlpack.h> (Debian: libdlpack-dev) to read its fields;
// this header needs only the name.
struct DLManagedTensor;

namespace quiver {

enum class ErrorCode : int {
  InvalidArgument = 1,   // wrong launch arguments, sizes, names
  InvalidFatBinary,      // malformed / truncated / unsupported .qfb
  NotFound,              // no such kernel, no image for this device, no such backend
  BackendUnavailable,    // driver library or device missing
  DeviceError,           // the driver reported a failure
  OutOfMemory,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Host-side storage types for the kernel language's qv::half and qv::bf16 (bit patterns).
struct half {
  uint16_t bits = 0;
};
struct bf16 {
  uint16_t bits = 0;
};

namespace format { enum class ScalarType : uint8_t; }
namespace detail {
class DeviceImpl;
class ModuleImpl;
class BufferImpl;
class GraphImpl;

// Element type tag of a host type; the argument checker compares it with the manifest.
enum class Elem : uint8_t { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };
template <typename T> constexpr Elem elem_of();
template <> constexpr Elem elem_of<bool>() { return Elem::Bool; }
template <> constexpr Elem elem_of<int8_t>() { return Elem::I8; }
template <> constexpr Elem elem_of<uint8_t>() { return Elem::U8; }
template <> constexpr Elem elem_of<int16_t>() { return Elem::I16; }
template <> constexpr Elem elem_of<uint16_t>() { return Elem::U16; }
template <> constexpr Elem elem_of<int32_t>() { return Elem::I32; }
template <> constexpr Elem elem_of<uint32_t>() { return Elem::U32; }
template <> constexpr Elem elem_of<int64_t>() { return Elem::I64; }
template <> constexpr Elem elem_of<uint64_t>() { return Elem::U64; }
template <> constexpr Elem elem_of<half>() { return Elem::F16; }
template <> constexpr Elem elem_of<bf16>() { return Elem::BF16; }
template <> constexpr Elem elem_of<float>() { return Elem::F32; }
template <> constexpr Elem elem_of<double>() { return Elem::F64; }

// One launch argument, type-erased; checked against the manifest before anything launches.
struct Arg {
  bool is_buffer = false;
  Elem elem = Elem::U8;
  const BufferImpl* buffer = nullptr;  // when is_buffer
  uint8_t scalar[8] = {};              // when !is_buffer, the value's bytes
};
}  // namespace detail

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

class Device;
class Module;

namespace detail {
// The fat binary `fatbin` loaded on `device` by the first call for that device and fat binary;
// later calls give a Module sharing what it loaded. For fat binaries embedded in the program:
// quiverc's generated <ns>::load(device) and the op library call it. What it loaded belongs to
// the Device and is released with it: it never keeps the Device alive (docs/runtime.md,
// "Lifetimes"). Thread-safe. `label` names the fat binary in error messages.
Module load_cached(const Device& device, std::span<const std::byte> fatbin, std::string_view label);
}  // namespace detail

// A typed device allocation of `size()` elements of T.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  size_t size() const noexcept { return size_; }
  size_t bytes() const noexcept { return size_ * sizeof(T); }
  void upload(std::span<const T> host);     // host.size() must be <= size()
  void download(std::span<T> host) const;   // host.size() must be <= size()
  const std::shared_ptr<detail::BufferImpl>& impl() const noexcept { return impl_; }
  // The same memory as elements of U: bytes() / sizeof(U) of them (rounded down), sharing it and
  // keeping it alive like a copy of this Buffer. For a kernel or op that reads a buffer as another
  // type (int8 activations written as 32-bit words and read as bytes).
  template <typename U>
  Buffer<U> as() const {
    return Buffer<U>(impl_, bytes() / sizeof(U));
  }

  // Interop (docs/runtime.md). The backend's handle for this memory, as an integer: the
  // CUdeviceptr (cuda), the VkBuffer (vulkan) or the host address (cpu). Valid while this Buffer
  // or a copy of it lives; launches queued on the device may still be using the memory, so call
  // Device::synchronize() before handing it to another API.
  uint64_t native_handle() const;
  // The buffer as a DLPack tensor (1-D, size() elements of T) on kDLCUDA:<index> (cuda) or kDLCPU
  // (cpu); the vulkan backend throws. Waits for the device's queued launches first. The tensor
  // keeps the memory alive (even past the Device and this Buffer) until its deleter is called,
  // which the consumer must do exactly once.
  DLManagedTensor* to_dlpack() const;

 private:
  friend class Device;
  template <typename>
  friend class Buffer;
  Buffer(std::shared_ptr<detail::BufferImpl> impl, size_t n) : impl_(std::move(impl)), size_(n) {}
  std::shared_ptr<detail::BufferImpl> impl_;
  size_t size_ = 0;
};

class Kernel {
 public:
  const std::string& name() const noexcept { return name_; }
  // Checks every argument against the manifest (count, buffer vs scalar, element type) and
  // throws quiver::Error naming the kernel and the argument before anything is launched.
  template <typename... Args>
  void launch(Grid grid, const Args&... args) const {
    detail::Arg packed[sizeof...(Args) > 0 ? sizeof...(Args) : 1];
    size_t i = 0;
    ((packed[i++] = pack(args)), ...);
    launch_packed(grid, std::span<const detail::Arg>(packed, sizeof...(Args)));
  }
  void launch_packed(Grid grid, std::span<const detail::Arg> args) const;

 private:
  friend class Module;
  Kernel(std::shared_ptr<detail::ModuleImpl> m, size_t index, std::string name)
      : module_(std::move(m)), index_(index), name_(std::move(name)) {}
  template <typename T>
  static detail::Arg pack(const Buffer<T>& b) {
    detail::Arg a;
    a.is_buffer = true;
    a.elem = detail::elem_of<T>();
    a.buffer = b.impl().get();
    return a;
  }
  template <typename T>
    requires(std::is_arithmetic_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bf16>)
  static detail::Arg pack(const T& v) {
    static_assert(sizeof(T) <= 8);
    detail::Arg a;
    a.elem = detail::elem_of<T>();
    std::memcpy(a.scalar, &v, sizeof(T));
    return a;
  }
  std::shared_ptr<detail::ModuleImpl> module_;
  size_t index_ = 0;
  std::string name_;
};

class Module {
 public:
  Kernel kernel(std::string_view name) const;        // throws NotFound naming the kernel and the file
  std::vector<std::string> kernel_names() const;
  // Whether the image loaded for this device has kernel `name` (a kernel limited with
  // QV_TARGETS is listed by kernel_names() everywhere but exists only in its targets' images).
  bool has_kernel(std::string_view name) const;
  std::string_view backend_image() const;           // which image was loaded, e.g. "cubin sm_90"

 private:
  friend class Device;
  friend Module detail::load_cached(const Device&, std::span<const std::byte>, std::string_view);
  explicit Module(std::shared_ptr<detail::ModuleImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::ModuleImpl> impl_;
};

// A sequence of kernel launches recorded once (Device::record) and queued again by one call:
// a CUDA graph on CUDA, one pre-recorded command buffer on Vulkan, the list itself on the CPU
// (docs/runtime.md, "Graphs"). Each replay runs the launches with the arguments they were
// recorded with: the same buffers (their contents as they are when the replay runs) and the
// same scalar values, so what changes between replays lives in device memory. The Graph keeps
// its buffers, modules and Device alive. Thread-safe like a launch.
class Graph {
 public:
  Graph() = default;
  void replay() const;                  // queues the launches, in order, after earlier work
  size_t launch_count() const noexcept;   // how many launches were recorded

 private:
  friend class Device;
  explicit Graph(std::shared_ptr<detail::GraphImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::GraphImpl> impl_;
};

class Device {
 public:
  // Best backend (CUDA > HIP > Metal > Vulkan > CPU), device 0 of it; or the one named:
  // "cuda", "vulkan", "cpu" (device 0) or "cuda:1", "vulkan:0", "cpu:2" (that device). An index
  // past the backend's devices throws NotFound naming how many there are; a backend whose
  // driver is missing, too old or reports no device throws BackendUnavailable saying why.
  // QUIVER_BACKEND (same syntax) overrides the automatic choice. Each Device has its own queue
  // (CUDA stream, Vulkan queue, CPU worker pool): docs/runtime.md. Its backend is released when
  // the last Device, Buffer, Module or Kernel referring to it goes (docs/runtime.md, "Lifetimes").
  static Device open(std::string_view backend = {});
  static std::vector<std::string> available_backends();
  // How many devices `backend` ("cuda", "vulkan", "cpu") can open here; 0 when its driver is
  // missing or reports none. Throws NotFound for a name that is not a backend.
  static size_t count(std::string_view backend);

  std::string backend_name() const;                  // "cuda", "vulkan", "cpu"
  std::string device_name() const;                   // e.g. "NVIDIA H100 80GB HBM3"
  size_t index() const;                              // N of "cuda:N": which device of the backend

  // Interop (docs/runtime.md): the queue this Device submits to — the CUstream (cuda), the
  // VkQueue (vulkan), nullptr (cpu: launches run before launch() returns) — and the driver
  // object it lives in: the CUcontext (the device's primary context) / the VkDevice / nullptr.
  void* native_stream() const;
  void* native_device() const;

  // Benchmark timing: runs `work` (which queues launches on this Device) and returns the
  // milliseconds the device spent from the end of the work queued before to the end of the
  // work queued inside — CUDA events, Vulkan timestamp queries, the host clock on the CPU
  // backend. Waits for the device.
  double elapsed_ms(const std::function<void()>& work) const;
  // The same for `runs` runs of `work(i)`, queued back to back with a timer pair around each,
  // waiting for the device once at the end: the device never idles between runs, as it does
  // when the host waits after each (an idle NVIDIA GPU under Vulkan drops its SM clock to
  // 345 MHz within milliseconds). Element i is run i's milliseconds.
  std::vector<double> elapsed_ms_each(size_t runs, const std::function<void(size_t)>& work) const;

  // Wraps the memory of a DLPack tensor as a Buffer<T> without copying (cuda and cpu backends).
  // The tensor must be on this device (kDLCUDA / kDLCUDAManaged with this index for cuda;
  // kDLCPU or kDLCUDAHost for cpu), have T's dtype with one lane, and be compact row-major
  // (it is flattened). On success the Buffer owns the tensor: its deleter is called exactly once,
  // after the last Buffer referring to it is gone and launches using it have finished. On failure
  // quiver::Error names the fault and the caller still owns the tensor.
  template <typename T>
  Buffer<T> from_dlpack(DLManagedTensor* tensor) const;

  Module load(const std::string& path) const;        // a .qfb file
  Module load(std::span<const std::byte> fatbin, std::string_view label = "<memory>") const;

  template <typename T>
  Buffer<T> alloc(size_t n) const {
    return Buffer<T>(alloc_bytes(n * sizeof(T)), n);
  }
  void synchronize() const;
  // Runs `work` and records, instead of running, every launch it queues on this Device from the
  // calling thread (each checked as Kernel::launch checks it; the op library's calls work
  // unchanged). Uploads, downloads, synchronize() and timers on this Device from that thread
  // throw InvalidArgument while it records: they cannot be replayed. One recording at a time
  // per Device. Launches on other Devices, and from other threads, run as usual.
  Graph record(const std::function<void()>& work) const;

  std::shared_ptr<detail::BufferImpl> alloc_bytes(size_t bytes) const;
  const std::shared_ptr<detail::DeviceImpl>& impl() const noexcept { return impl_; }

 private:
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::DeviceImpl> impl_;
};

namespace detail {
uint64_t buffer_native_handle(const BufferImpl* b);
DLManagedTensor* buffer_to_dlpack(const std::shared_ptr<BufferImpl>& b, Elem elem, size_t count);
// Checks `tensor` (against `expected` when given) and wraps it; sets `elem` and `count`.
std::shared_ptr<BufferImpl> buffer_from_dlpack(const std::shared_ptr<DeviceImpl>& device,
                                               DLManagedTensor* tensor, const Elem* expected,
                                               Elem& elem, size_t& count);
void buffer_upload(const BufferImpl& b, const void* src, size_t bytes);
void buffer_download(const BufferImpl& b, void* dst, size_t bytes);
size_t buffer_bytes(const BufferImpl& b);
[[noreturn]] void throw_size_mismatch(const char* what, size_t got, size_t have);
}  // namespace detail

template <typename T>
uint64_t Buffer<T>::native_handle() const {
  return detail::buffer_native_handle(impl_.get());
}
template <typename T>
DLManagedTensor* Buffer<T>::to_dlpack() const {
  return detail::buffer_to_dlpack(impl_, detail::elem_of<T>(), size_);
}
template <typename T>
Buffer<T> Device::from_dlpack(DLManagedTensor* tensor) const {
  const detail::Elem expected = detail::elem_of<T>();
  detail::Elem elem = expected;
  size_t count = 0;
  std::shared_ptr<detail::BufferImpl> b = detail::buffer_from_dlpack(impl_, tensor, &expected, elem, count);
  return Buffer<T>(std::move(b), count);
}

template <typename T>
void Buffer<T>::upload(std::span<const T> host) {
  if (!impl_) throw Error(ErrorCode::InvalidArgument, "upload to an unallocated Buffer (use Device::alloc)");
  if (host.size() > size_) detail::throw_size_mismatch("upload", host.size(), size_);
  detail::buffer_upload(*impl_, host.data(), host.size() * sizeof(T));
}
template <typename T>
void Buffer<T>::download(std::span<T> host) const {
  if (!impl_) throw Error(ErrorCode::InvalidArgument, "download from an unallocated Buffer (use Device::alloc)");
  if (host.size() > size_) detail::throw_size_mismatch("download", host.size(), size_);
  detail::buffer_download(*impl_, host.data(), host.size() * sizeof(T));
}

}  // namespace quiver
