// The CUDA backend: driver API only (dlopen'd, see cuda_driver.h), the device's primary
// context, one non-blocking stream per Device. Launches are asynchronous; upload, download and
// synchronize wait on the stream. Kernel arguments follow docs/abi.md: a buffer is passed as its
// CUdeviceptr, a scalar as a pointer to its value.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "cuda_driver.h"
#include "cuda_image_select.h"

namespace quiver::backend {
namespace cuda {
namespace {

// Everything a Device, its Buffers and its Modules share; whichever is destroyed last releases it.
struct Context {
  std::shared_ptr<const Driver> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int ordinal = 0;   // the driver's device ordinal = quiver's "cuda:<ordinal>"
  int cc_major = 0;
  int cc_minor = 0;
  std::string name;
  std::string last_kernel;   // named in errors that surface at the next synchronization

  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (stream) {
      driver->cuCtxSetCurrent(context);
      driver->cuStreamSynchronize(stream);
      driver->cuStreamDestroy(stream);
    }
    if (context) driver->cuDevicePrimaryCtxRelease(device);
  }

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }

  void check(CUresult result, const std::string& what) const {
    if (result == CUDA_SUCCESS) return;
    throw Error(result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
                "cuda: " + what + " failed on " + name + ": " + driver->error_text(result));
  }
  // The calling thread may have another context current (or none): make ours current first.
  void make_current() const { check(driver->cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

  // Waits for every launch so far. Asynchronous kernel faults surface here, so the message names
  // the last kernel launched.
  void synchronize(const std::string& what) const {
    make_current();
    CUresult result = driver->cuStreamSynchronize(stream);
    if (result == CUDA_SUCCESS) return;
    std::string after = last_kernel.empty() ? "" : " (last kernel launched: '" + last_kernel + "')";
    throw Error(ErrorCode::DeviceError, "cuda: " + what + ": waiting for the stream failed on " +
                                            name + after + ": " + driver->error_text(result));
  }
};

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(std::shared_ptr<Context> context, size_t size) : context_(std::move(context)) {
    bytes = size;
    if (size == 0) return;   // cuMemAlloc rejects 0 bytes; an empty buffer has no storage
    context_->make_current();
    context_->check(context_->driver->cuMemAlloc(&pointer, size),
                    "cuMemAlloc of " + std::to_string(size) + " bytes");
  }
  // Foreign device memory (DLPack import): used in place, never freed here.
  CudaBuffer(std::shared_ptr<Context> context, CUdeviceptr foreign, size_t size)
      : pointer(foreign), context_(std::move(context)), owned_(false) {
    bytes = size;
  }
  ~CudaBuffer() override {
    if (!pointer) return;
    // A launch still in flight may use this memory: wait before freeing it (or before the
    // foreign owner is told it may free it). Errors are ignored here (destructors must not
    // throw); they resurface at the next synchronize.
    const Driver& d = *context_->driver;
    d.cuCtxSetCurrent(context_->context);
    d.cuStreamSynchronize(context_->stream);
    if (owned_) d.cuMemFree(pointer);
  }
  uint64_t native_handle() const override { return pointer; }
  const std::shared_ptr<Context>& context() const { return context_; }
  CUdeviceptr pointer = 0;   // kernel parameters point at this member (it must not move)

 private:
  std::shared_ptr<Context> context_;
  bool owned_ = true;
};

// Owns a CUmodule, so that a constructor that throws half-way still unloads it.
struct LoadedModule {
  std::shared_ptr<Context> context;
  CUmodule module = nullptr;
  ~LoadedModule() {
    if (!module) return;
    context->driver->cuCtxSetCurrent(context->context);
    context->driver->cuStreamSynchronize(context->stream);
    context->driver->cuModuleUnload(module);
  }
};

class CudaModule final : public Module {
 public:
  CudaModule(std::shared_ptr<Context> context, const format::FatBinary& fatbin,
             const ImageChoice& choice)
      : loaded_{std::move(context)}, description_(choice.description),
        info_(ImageInfo::of(fatbin.manifest().images[choice.index])), label_(fatbin.label()) {
    Context& ctx = *loaded_.context;
    const format::Image& image = fatbin.manifest().images[choice.index];
    // QUIVER_CUDA_PROGRAMMATIC_LAUNCH=0 launches every kernel only after the previous one has
    // finished (the A/B of docs/perf, and a way to rule the overlap out when hunting a race).
    programmatic_ = use_programmatic_launch(image, ctx.driver->cuLaunchKernelEx != nullptr, ctx.cc_major,
                                            std::getenv("QUIVER_CUDA_PROGRAMMATIC_LAUNCH"));
    std::vector<std::byte> data = fatbin.image_data(choice.index);
    // PTX is handed to the driver as a NUL-terminated string; a cubin is read through its own
    // ELF headers (the driver takes no size), so they must stay inside the image.
    if (choice.jit && (data.empty() || data.back() != std::byte{0})) data.push_back(std::byte{0});
    if (!choice.jit) {
      if (std::string why = check_cubin(data); !why.empty())
        throw Error(ErrorCode::InvalidFatBinary,
                    "cuda: " + label_ + ": image '" + description_ + "' is not a usable cubin: " + why);
    }

    // The driver writes JIT diagnostics here; without it a PTX failure says only "invalid PTX".
    std::vector<char> error_log(32 * 1024, '\0');
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log.data(), reinterpret_cast<void*>(uintptr_t{error_log.size() - 1})};
    ctx.make_current();
    CUresult result = ctx.driver->cuModuleLoadDataEx(&loaded_.module, data.data(), 2, options, values);
    if (result != CUDA_SUCCESS) {
      loaded_.module = nullptr;
      std::string log(error_log.data());
      throw Error(result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
                  "cuda: loading image '" + description_ + "' of " + label_ + " on " + ctx.name +
                      " failed: " + ctx.driver->error_text(result) +
                      (log.empty() ? "" : "\nJIT log:\n" + log));
    }

    // Every entry point is resolved here, not on first launch: under CUDA's lazy loading
    // cuModuleGetFunction loads the function's code, and a load while another stream runs may
    // wait for that stream — a kernel that polls for its peer on another stream would then spin
    // forever (tests/runtime cuda_devices_test LaunchesOnTwoDevicesOverlap caught exactly that).
    for (const format::Kernel& k : fatbin.manifest().kernels) {
      Entry entry{k.name, k.symbol, k.block, nullptr, 0, {}};
      bool in_image = false;
      for (const std::string& s : image.kernels) in_image = in_image || s == k.symbol;
      if (in_image) {
        result = ctx.driver->cuModuleGetFunction(&entry.function, loaded_.module, k.symbol.c_str());
        if (result != CUDA_SUCCESS)
          throw Error(ErrorCode::InvalidFatBinary,
                      "cuda: image '" + description_ + "' of " + label_ + " lists kernel '" +
                          k.name + "' but has no entry point '" + k.symbol +
                          "': " + ctx.driver->error_text(result));
        if (k.shared_bytes > format::kCudaStaticSharedBytes) enable_dynamic_shared(entry, k.shared_bytes);
      }
      entries_.push_back(std::move(entry));
    }
  }

  void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) override {
    if (kernel >= entries_.size())
      throw Error(ErrorCode::InvalidArgument, "cuda: kernel index " + std::to_string(kernel) +
                                                  " out of range (" + label_ + " has " +
                                                  std::to_string(entries_.size()) + " kernels)");
    const Entry& entry = entries_[kernel];
    Context& ctx = *loaded_.context;
    if (!entry.function)
      throw Error(ErrorCode::NotFound, "cuda: kernel '" + entry.name + "' is not in the loaded image '" +
                                           description_ + "' of " + label_);

    if (!entry.unusable.empty())
      throw Error(ErrorCode::DeviceError, "cuda: kernel '" + entry.name + "' of " + label_ + " cannot run on " +
                                              ctx.name + ": " + entry.unusable);
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].buffer) {
        auto* buffer = dynamic_cast<CudaBuffer*>(args[i].buffer);
        if (!buffer || buffer->context() != loaded_.context)
          throw Error(ErrorCode::InvalidArgument,
                      "cuda: kernel '" + entry.name + "' argument " + std::to_string(i) +
                          ": the buffer was allocated on another device or backend");
        params[i] = &buffer->pointer;
      } else if (args[i].scalar) {
        // cuLaunchKernel copies the values before it returns, so the caller's storage suffices.
        params[i] = const_cast<void*>(args[i].scalar);
      } else {
        throw Error(ErrorCode::InvalidArgument, "cuda: kernel '" + entry.name + "' argument " +
                                                    std::to_string(i) + " has neither a buffer nor a value");
      }
    }
    ctx.make_current();
    CUresult result;
    if (programmatic_) {
      // The image's kernels wait for the previous launch's results themselves (docs/abi.md
      // "Overlapped launches"), so the driver may start this one while that one drains.
      CUlaunchAttribute overlap{};
      overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      overlap.value.programmatic_stream_serialization_allowed = 1;
      CUlaunchConfig config{grid.x,         grid.y,     grid.z,   entry.block[0], entry.block[1],
                            entry.block[2], entry.dynamic_shared, ctx.stream, &overlap, 1};
      result = ctx.driver->cuLaunchKernelEx(&config, entry.function, params.empty() ? nullptr : params.data(), nullptr);
    } else {
      result = ctx.driver->cuLaunchKernel(entry.function, grid.x, grid.y, grid.z, entry.block[0], entry.block[1],
                                          entry.block[2], entry.dynamic_shared, ctx.stream,
                                          params.empty() ? nullptr : params.data(), nullptr);
    }
    if (result != CUDA_SUCCESS)
      throw Error(result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
                  "cuda: launching kernel '" + entry.name + "' (grid " + std::to_string(grid.x) + "x" +
                      std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
                      std::to_string(entry.block[0]) + "x" + std::to_string(entry.block[1]) + "x" +
                      std::to_string(entry.block[2]) + ") failed on " + ctx.name + ": " +
                      ctx.driver->error_text(result));
    ctx.last_kernel = entry.name;
  }

  std::string image_description() const override { return description_; }
  const ImageInfo& image_info() const override { return info_; }

 private:
  bool programmatic_ = false;   // launches carry CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
  struct Entry {
    std::string name;
    std::string symbol;
    std::array<uint32_t, 3> block;
    CUfunction function;       // null when the loaded image lacks this kernel
    uint32_t dynamic_shared;   // launch's sharedMem: shared_bytes above 48 KiB, else 0
    std::string unusable;      // why it cannot launch on this device (over its shared-memory limit)
  };

  // A kernel with more than 48 KiB of shared memory has it as dynamic shared memory (docs/abi.md):
  // the driver allows that much only after the function's limit is raised to it.
  void enable_dynamic_shared(Entry& entry, uint32_t bytes) {
    Context& ctx = *loaded_.context;
    int optin = 0;
    ctx.check(ctx.driver->cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                               ctx.device),
              "reading the shared-memory limit");
    if (bytes > static_cast<uint32_t>(optin)) {   // the module's other kernels stay usable
      entry.unusable = std::to_string(bytes) + " bytes of shared memory exceed the device's opt-in limit of " +
                       std::to_string(optin) + " per block";
      return;
    }
    ctx.check(ctx.driver->cuFuncSetAttribute(entry.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(bytes)),
              "allowing kernel '" + entry.name + "' " + std::to_string(bytes) + " bytes of shared memory");
    entry.dynamic_shared = bytes;
  }
  LoadedModule loaded_;
  std::string description_;
  ImageInfo info_;
  std::string label_;
  std::vector<Entry> entries_;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(std::shared_ptr<Context> context) : context_(std::move(context)) {}

  std::string backend_name() const override { return "cuda"; }
  std::string device_name() const override { return context_->name; }

  std::unique_ptr<Buffer> alloc(size_t bytes) override {
    return std::make_unique<CudaBuffer>(context_, bytes);
  }

  void upload(Buffer& dst, const void* src, size_t bytes) override {
    CudaBuffer& buffer = own(dst, "upload");
    check_size("upload", bytes, buffer.bytes);
    if (bytes == 0) return;
    context_->make_current();
    // Queued on our stream, so it lands after every launch already queued that may read the
    // old contents; the wait makes upload synchronous as the interface promises.
    context_->check(context_->driver->cuMemcpyHtoDAsync(buffer.pointer, src, bytes, context_->stream),
                    "upload of " + std::to_string(bytes) + " bytes");
    context_->synchronize("upload");
  }

  void download(const Buffer& src, void* dst, size_t bytes) override {
    const CudaBuffer& buffer = own(const_cast<Buffer&>(src), "download");
    check_size("download", bytes, buffer.bytes);
    if (bytes == 0) return;
    context_->make_current();
    context_->check(context_->driver->cuMemcpyDtoHAsync(dst, buffer.pointer, bytes, context_->stream),
                    "download of " + std::to_string(bytes) + " bytes");
    context_->synchronize("download");
  }

  // The images this device can run, best first, as QUIVER_CUDA_IMAGE="ptx sm_80" restricts
  // them: only those whose description starts so (the device suite runs the sm_80 kernels,
  // mma.sync ones included, through the JIT on an H100 with it).
  std::vector<ImageChoice> choose_images(const format::Manifest& manifest) const {
    std::vector<ImageChoice> choices = rank_cuda_images(manifest, context_->cc_major, context_->cc_minor);
    if (const char* only = std::getenv("QUIVER_CUDA_IMAGE"); only != nullptr && *only != '\0')
      std::erase_if(choices, [&](const ImageChoice& c) { return !c.description.starts_with(only); });
    return choices;
  }

  // The best image; the others are read (under the lock) only when the driver refuses it.
  std::vector<size_t> images_to_load(const format::FatBinary& fatbin) const override {
    const std::vector<ImageChoice> choices = choose_images(fatbin.manifest());
    if (choices.empty()) return {};
    return {choices.front().index};
  }

  std::unique_ptr<Module> load(const format::FatBinary& fatbin) override {
    const format::Manifest& manifest = fatbin.manifest();
    std::vector<ImageChoice> choices = choose_images(manifest);
    if (const char* only = std::getenv("QUIVER_CUDA_IMAGE"); only != nullptr && *only != '\0') {
      if (choices.empty())
        throw Error(ErrorCode::NotFound, "cuda: QUIVER_CUDA_IMAGE='" + std::string(only) + "' matches no image of " +
                                             fatbin.label() + " that runs on " + context_->name + " (" +
                                             context_->arch() + "); the file has: " + describe_images(manifest));
    }
    if (choices.empty())
      throw Error(ErrorCode::NotFound,
                  "cuda: " + fatbin.label() + " has no image for " + context_->name + " (" +
                      context_->arch() + "): it needs a cubin " + context_->arch() +
                      " or PTX for " + context_->arch() + " or older; the file has: " +
                      describe_images(manifest));
    // Try the best image first; a cubin the driver refuses falls back to PTX. All failures are
    // reported together when nothing loads.
    std::string failures;
    for (const ImageChoice& choice : choices) {
      try {
        return std::make_unique<CudaModule>(context_, fatbin, choice);
      } catch (const Error& e) {
        if (choices.size() == 1 || e.code() == ErrorCode::InvalidFatBinary) throw;
        failures += std::string("\n  ") + e.what();
      }
    }
    throw Error(ErrorCode::DeviceError, "cuda: no image of " + fatbin.label() + " could be loaded on " +
                                            context_->name + ":" + failures);
  }

  void synchronize() override { context_->synchronize("synchronize"); }

  std::unique_ptr<Timer> start_timer() override {
    struct EventTimer final : Timer {
      std::shared_ptr<Context> ctx;
      CUevent start = nullptr, end_event = nullptr;
      ~EventTimer() override {
        if (start) ctx->driver->cuEventDestroy(start);
        if (end_event) ctx->driver->cuEventDestroy(end_event);
      }
      void end() override {
        ctx->make_current();
        ctx->check(ctx->driver->cuEventRecord(end_event, ctx->stream), "cuEventRecord");
      }
      double ms() override {
        ctx->make_current();
        ctx->check(ctx->driver->cuEventSynchronize(end_event), "cuEventSynchronize");
        float ms = 0;
        ctx->check(ctx->driver->cuEventElapsedTime(&ms, start, end_event), "cuEventElapsedTime");
        return ms;
      }
    };
    auto t = std::make_unique<EventTimer>();
    t->ctx = context_;
    context_->make_current();
    context_->check(context_->driver->cuEventCreate(&t->start, 0), "cuEventCreate");
    context_->check(context_->driver->cuEventCreate(&t->end_event, 0), "cuEventCreate");
    context_->check(context_->driver->cuEventRecord(t->start, context_->stream), "cuEventRecord");
    return t;
  }

  // The launches captured from our stream into a CUDA graph (each through CudaModule::launch,
  // so checked and set up as a launch is), instantiated once; a replay is one cuGraphLaunch.
  std::unique_ptr<Graph> build_graph(std::span<const RecordedLaunch> launches) override {
    struct CudaGraph final : Graph {
      std::shared_ptr<Context> ctx;
      CUgraph graph = nullptr;
      CUgraphExec exec = nullptr;
      std::string last_kernel;
      ~CudaGraph() override {
        if (!exec && !graph) return;
        ctx->driver->cuCtxSetCurrent(ctx->context);
        // A replay may still run: the graph's resources go once it has finished.
        ctx->driver->cuStreamSynchronize(ctx->stream);
        if (exec) ctx->driver->cuGraphExecDestroy(exec);
        if (graph) ctx->driver->cuGraphDestroy(graph);
      }
      void replay() override {
        ctx->make_current();
        ctx->check(ctx->driver->cuGraphLaunch(exec, ctx->stream), "cuGraphLaunch");
        ctx->last_kernel = last_kernel;
      }
    };
    if (launches.empty()) return Device::build_graph(launches);
    auto g = std::make_unique<CudaGraph>();
    g->ctx = context_;
    const Driver& d = *context_->driver;
    context_->make_current();
    context_->check(d.cuStreamBeginCapture(context_->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                    "cuStreamBeginCapture");
    try {
      for (const RecordedLaunch& l : launches) l.module->launch(l.kernel, l.grid, l.args);
    } catch (...) {
      CUgraph partial = nullptr;
      if (d.cuStreamEndCapture(context_->stream, &partial) == CUDA_SUCCESS && partial) d.cuGraphDestroy(partial);
      throw;
    }
    context_->check(d.cuStreamEndCapture(context_->stream, &g->graph), "cuStreamEndCapture");
    context_->check(d.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0), "cuGraphInstantiateWithFlags");
    g->last_kernel = context_->last_kernel + " (the last launch of a replayed graph)";
    return g;
  }

  void* native_stream() const override { return context_->stream; }
  void* native_device() const override { return context_->context; }

  // The memory must belong to this device (cuPointerGetAttribute) and [address, address + bytes)
  // must lie inside one allocation (cuMemGetAddressRange), so a kernel cannot be handed a range
  // the driver never gave out.
  std::unique_ptr<Buffer> import_memory(uint64_t address, size_t bytes) override {
    if (bytes == 0) return std::make_unique<CudaBuffer>(context_, 0, 0);
    const Driver& d = *context_->driver;
    context_->make_current();
    int ordinal = -1;
    const std::string where = "cuda: foreign memory at " + hex(address);
    if (CUresult r = d.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
        r != CUDA_SUCCESS)
      throw Error(ErrorCode::InvalidArgument,
                  where + " is not device memory the CUDA driver knows: " + d.error_text(r));
    if (ordinal != context_->ordinal)
      throw Error(ErrorCode::InvalidArgument, where + " belongs to cuda:" + std::to_string(ordinal) +
                                                  ", not to this device (cuda:" +
                                                  std::to_string(context_->ordinal) + ")");
    // Virtual-memory-management mappings report no context; memory of another context on the
    // same device cannot be used by kernels of ours.
    CUcontext owner = nullptr;
    if (d.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, address) == CUDA_SUCCESS &&
        owner != nullptr && owner != context_->context)
      throw Error(ErrorCode::InvalidArgument,
                  where + " was allocated in another CUDA context; quiver uses the device's primary "
                          "context (as the CUDA runtime and PyTorch do)");
    CUdeviceptr base = 0;
    size_t size = 0;
    if (CUresult r = d.cuMemGetAddressRange(&base, &size, address); r != CUDA_SUCCESS)
      throw Error(ErrorCode::InvalidArgument,
                  where + ": cuMemGetAddressRange failed: " + d.error_text(r));
    if (address + bytes > base + size || address + bytes < address)
      throw Error(ErrorCode::InvalidArgument,
                  where + ": " + std::to_string(bytes) + " bytes run past the end of its allocation (" +
                      std::to_string(size) + " bytes from " + hex(base) + ")");
    return std::make_unique<CudaBuffer>(context_, address, bytes);
  }

 private:
  static std::string hex(uint64_t v) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
  }
  CudaBuffer& own(Buffer& b, const char* what) const {
    auto* buffer = dynamic_cast<CudaBuffer*>(&b);
    if (!buffer || buffer->context() != context_)
      throw Error(ErrorCode::InvalidArgument,
                  std::string("cuda: ") + what + ": the buffer was allocated on another device or backend");
    return *buffer;
  }
  static void check_size(const char* what, size_t bytes, size_t have) {
    if (bytes > have)
      throw Error(ErrorCode::InvalidArgument, std::string("cuda: ") + what + " of " +
                                                  std::to_string(bytes) + " bytes into a buffer of " +
                                                  std::to_string(have) + " bytes");
  }
  std::shared_ptr<Context> context_;
};

// Loads the driver, initialises it and counts its devices; nullptr with `why_not` set when any
// step fails or there is no device.
std::shared_ptr<const Driver> init_driver(int& count, std::string& why_not) {
  count = 0;
  std::shared_ptr<const Driver> driver = Driver::load(why_not);
  if (!driver) return nullptr;
  CUresult result = driver->cuInit(0);
  if (result != CUDA_SUCCESS) {
    why_not = "cuInit failed: " + driver->error_text(result) + " (CUDA driver " +
              driver_version_string(driver->version) + ")";
    return nullptr;
  }
  result = driver->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    why_not = "cuDeviceGetCount failed: " + driver->error_text(result);
    count = 0;
    return nullptr;
  }
  if (count <= 0) {
    why_not = "the CUDA driver (version " + driver_version_string(driver->version) + ") reports no devices";
    count = 0;
    return nullptr;
  }
  return driver;
}

size_t count_devices(std::string& why_not) {
  int count = 0;
  return init_driver(count, why_not) ? static_cast<size_t>(count) : 0;
}

std::unique_ptr<Device> open_device(size_t index, size_t& device_count, std::string& why_not) {
  int count = 0;
  std::shared_ptr<const Driver> driver = init_driver(count, why_not);
  device_count = static_cast<size_t>(count);
  if (!driver) return nullptr;
  if (index >= device_count) {
    why_not = "the CUDA driver reports " + std::to_string(count) + " device(s)";
    return nullptr;
  }
  const int ordinal = static_cast<int>(index);

  auto context = std::make_shared<Context>();
  context->driver = driver;
  context->ordinal = ordinal;
  try {
    context->check(driver->cuDeviceGet(&context->device, ordinal), "cuDeviceGet");
    char name[256] = {};
    context->check(driver->cuDeviceGetName(name, sizeof name - 1, context->device), "cuDeviceGetName");
    context->name = name;
    context->check(driver->cuDeviceGetAttribute(&context->cc_major,
                                                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                context->device),
                   "cuDeviceGetAttribute(compute capability major)");
    context->check(driver->cuDeviceGetAttribute(&context->cc_minor,
                                                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                context->device),
                   "cuDeviceGetAttribute(compute capability minor)");
    CUcontext primary = nullptr;
    context->check(driver->cuDevicePrimaryCtxRetain(&primary, context->device), "cuDevicePrimaryCtxRetain");
    context->context = primary;
    context->make_current();
    context->check(driver->cuStreamCreate(&context->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  } catch (const Error& e) {
    why_not = e.what();
    return nullptr;
  }
  return std::make_unique<CudaDevice>(std::move(context));
}

}  // namespace
}  // namespace cuda

extern const Factory cuda_factory;
const Factory cuda_factory{"cuda", &cuda::count_devices, &cuda::open_device};

}  // namespace quiver::backend
