// The HIP backend ("hip"): AMD GPUs through the HSA runtime (ROCm's libhsa-runtime64.so.1,
// dlopen'd, see hsa_api.h) — no HIP runtime, no ROCm toolkit. One GPU agent per Device, one
// in-order AQL queue (every packet has the barrier bit), one completion signal and kernarg
// allocation per launch, freed once the launch is known complete. Buffers live in the agent's
// coarse-grained global region (fine-grained when there is none); upload and download stage
// through the host-accessible kernarg region with hsa_memory_copy.
//
// NEVER RUN ON HARDWARE: no machine with an AMD GPU has been available (docs/targets.md). What
// runs in the tests is the pure logic (hsa_dispatch.h), detection against ROCm's real runtime
// without a GPU, and this whole file against a fake runtime (tests/runtime/hsa_fake_runtime.cpp)
// that checks the packets and kernargs it receives but runs no kernel code.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "hsa_api.h"
#include "hsa_dispatch.h"

namespace quiver::backend {
namespace hsa {
namespace {

constexpr uint32_t kQueuePackets = 1024;
constexpr uint64_t kWaitTimeoutHint = 1'000'000;   // timestamp ticks between checks for a queue error

// hsa_init / hsa_shut_down are reference counted by the runtime: one Runtime per user.
struct Runtime {
  std::shared_ptr<const Api> api;
  explicit Runtime(std::shared_ptr<const Api> a) : api(std::move(a)) {}
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime() { api->hsa_shut_down(); }
};

// Loads and initialises the runtime; nullptr with `why_not` set when either fails.
std::shared_ptr<Runtime> start_runtime(std::string& why_not) {
  std::shared_ptr<const Api> api = Api::load(why_not);
  if (!api) return nullptr;
  hsa_status_t status = api->hsa_init();
  if (status != HSA_STATUS_SUCCESS) {
    why_not = "hsa_init failed: " + api->error_text(status) +
              " (no AMD GPU, or the amdgpu kernel driver's /dev/kfd is not accessible)";
    return nullptr;
  }
  auto runtime = std::make_shared<Runtime>(api);
  uint16_t major = 0, minor = 0;
  if (api->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, &major) != HSA_STATUS_SUCCESS ||
      api->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, &minor) != HSA_STATUS_SUCCESS ||
      major < kMinVersionMajor || (major == kMinVersionMajor && minor < kMinVersionMinor)) {
    why_not = api->library + " implements HSA " + std::to_string(major) + "." + std::to_string(minor) +
              "; quiver needs HSA 1.1 or newer";
    return nullptr;
  }
  return runtime;
}

std::vector<hsa_agent_t> gpu_agents(const Api& api) {
  std::vector<hsa_agent_t> agents;
  api.hsa_iterate_agents(
      [](hsa_agent_t agent, void* data) -> hsa_status_t {
        static_cast<std::vector<hsa_agent_t>*>(data)->push_back(agent);
        return HSA_STATUS_SUCCESS;
      },
      &agents);
  std::vector<hsa_agent_t> gpus;
  for (hsa_agent_t agent : agents) {
    hsa_device_type_t type{};
    if (api.hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) == HSA_STATUS_SUCCESS &&
        type == HSA_DEVICE_TYPE_GPU)
      gpus.push_back(agent);
  }
  return gpus;
}

std::string agent_string(const Api& api, hsa_agent_t agent, hsa_agent_info_t what) {
  char text[64] = {};
  if (api.hsa_agent_get_info(agent, what, text) != HSA_STATUS_SUCCESS) return {};
  text[sizeof text - 1] = '\0';
  return text;
}

struct Regions {
  hsa_region_t device{0};    // buffers
  hsa_region_t kernarg{0};   // kernel arguments and host staging
  bool device_coarse = false;
};

Regions find_regions(const Api& api, hsa_agent_t agent) {
  struct Search {
    const Api* api;
    Regions found;
    bool have_device = false, have_kernarg = false;
  } search{&api, {}, false, false};
  api.hsa_agent_iterate_regions(
      agent,
      [](hsa_region_t region, void* data) -> hsa_status_t {
        auto& s = *static_cast<Search*>(data);
        hsa_region_segment_t segment{};
        uint32_t flags = 0;
        bool allowed = false;
        if (s.api->hsa_region_get_info(region, HSA_REGION_INFO_SEGMENT, &segment) != HSA_STATUS_SUCCESS ||
            segment != HSA_REGION_SEGMENT_GLOBAL)
          return HSA_STATUS_SUCCESS;
        s.api->hsa_region_get_info(region, HSA_REGION_INFO_GLOBAL_FLAGS, &flags);
        s.api->hsa_region_get_info(region, HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED, &allowed);
        if (!allowed) return HSA_STATUS_SUCCESS;
        if ((flags & HSA_REGION_GLOBAL_FLAG_KERNARG) && !s.have_kernarg) {
          s.found.kernarg = region;
          s.have_kernarg = true;
        }
        // Device memory: coarse-grained (the GPU's own) beats fine-grained (host-coherent).
        if ((flags & HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED) && !s.found.device_coarse) {
          s.found.device = region;
          s.found.device_coarse = true;
          s.have_device = true;
        } else if ((flags & HSA_REGION_GLOBAL_FLAG_FINE_GRAINED) && !(flags & HSA_REGION_GLOBAL_FLAG_KERNARG) &&
                   !s.have_device) {
          s.found.device = region;
          s.have_device = true;
        }
        return HSA_STATUS_SUCCESS;
      },
      &search);
  if (!search.have_kernarg) search.found.kernarg.handle = 0;
  if (!search.have_device) search.found.device.handle = 0;
  return search.found;
}

// Everything a Device, its Buffers and its Modules share; whichever is destroyed last releases it.
struct Context {
  std::shared_ptr<Runtime> runtime;
  const Api* api = nullptr;
  hsa_agent_t agent{0};
  Regions regions;
  hsa_queue_t* queue = nullptr;
  hsa_profile_t profile = HSA_PROFILE_BASE;
  std::string name;        // "AMD Instinct MI210"
  std::string processor;   // "gfx90a"
  uint32_t max_workgroup = 0;
  std::atomic<int> queue_error{HSA_STATUS_SUCCESS};   // set by the runtime's queue callback thread
  std::string last_kernel;

  struct InFlight {
    hsa_signal_t signal;
    void* kernarg;
  };
  std::vector<InFlight> in_flight;

  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    try {
      wait_all("shutting down");
    } catch (...) {
      release_all();   // the queue failed: nothing more will complete
    }
    if (queue) api->hsa_queue_destroy(queue);
  }

  void check(hsa_status_t status, const std::string& what) const {
    if (status == HSA_STATUS_SUCCESS) return;
    throw Error(status == HSA_STATUS_ERROR_OUT_OF_RESOURCES ? ErrorCode::OutOfMemory : ErrorCode::DeviceError,
                "hip: " + what + " failed on " + name + ": " + api->error_text(status));
  }

  void throw_if_queue_failed(const std::string& what) const {
    int status = queue_error.load();
    if (status == HSA_STATUS_SUCCESS) return;
    std::string after = last_kernel.empty() ? "" : " (last kernel launched: '" + last_kernel + "')";
    throw Error(ErrorCode::DeviceError, "hip: " + what + ": the queue of " + name + " failed" + after + ": " +
                                            api->error_text(static_cast<hsa_status_t>(status)));
  }

  void release_all() {
    for (const InFlight& f : in_flight) {
      api->hsa_signal_destroy(f.signal);
      api->hsa_memory_free(f.kernarg);
    }
    in_flight.clear();
  }

  // Waits for every launch so far and frees their signals and kernarg memory. A kernel fault
  // reaches us through the queue callback, so the wait checks it between bounded waits.
  void wait_all(const std::string& what) {
    for (const InFlight& f : in_flight) {
      while (api->hsa_signal_wait_scacquire(f.signal, HSA_SIGNAL_CONDITION_LT, 1, kWaitTimeoutHint,
                                            HSA_WAIT_STATE_BLOCKED) >= 1)
        throw_if_queue_failed(what);
    }
    release_all();
    throw_if_queue_failed(what);
  }

  // Frees the signals and kernarg segments of launches already complete (they complete in
  // order), so a long run of launches without synchronize does not accumulate them.
  void reclaim_completed() {
    size_t done = 0;
    while (done < in_flight.size() && api->hsa_signal_load_scacquire(in_flight[done].signal) < 1) {
      api->hsa_signal_destroy(in_flight[done].signal);
      api->hsa_memory_free(in_flight[done].kernarg);
      ++done;
    }
    in_flight.erase(in_flight.begin(), in_flight.begin() + static_cast<std::ptrdiff_t>(done));
  }

  void* allocate(hsa_region_t region, size_t bytes, const std::string& what) {
    void* pointer = nullptr;
    check(api->hsa_memory_allocate(region, bytes, &pointer), what + " (" + std::to_string(bytes) + " bytes)");
    return pointer;
  }

  // Host memory the GPU can read and write, for staging copies; freed by the returned owner.
  std::unique_ptr<void, std::function<void(void*)>> staging(size_t bytes) {
    void* pointer = allocate(regions.kernarg, bytes, "allocating staging memory");
    return {pointer, [api = api](void* p) { api->hsa_memory_free(p); }};
  }
};

void on_queue_error(hsa_status_t status, hsa_queue_t*, void* data) {
  auto* context = static_cast<Context*>(data);
  int expected = HSA_STATUS_SUCCESS;
  context->queue_error.compare_exchange_strong(expected, status);
}

class HsaBuffer final : public Buffer {
 public:
  HsaBuffer(std::shared_ptr<Context> context, size_t size) : context_(std::move(context)) {
    bytes = size;
    if (size == 0) return;
    pointer = context_->allocate(context_->regions.device, size, "allocating a buffer");
  }
  ~HsaBuffer() override {
    if (!pointer) return;
    // A launch still in flight may use this memory: wait before freeing it. Errors resurface
    // at the next synchronize.
    try {
      context_->wait_all("freeing a buffer");
    } catch (...) {
    }
    context_->api->hsa_memory_free(pointer);
  }
  uint64_t native_handle() const override { return reinterpret_cast<uintptr_t>(pointer); }
  const std::shared_ptr<Context>& context() const { return context_; }
  void* pointer = nullptr;

 private:
  std::shared_ptr<Context> context_;
};

// Owns an executable, so that a constructor that throws half-way still destroys it.
struct LoadedExecutable {
  std::shared_ptr<Context> context;
  hsa_executable_t executable{0};
  ~LoadedExecutable() {
    if (!executable.handle) return;
    try {
      context->wait_all("unloading a module");
    } catch (...) {
    }
    context->api->hsa_executable_destroy(executable);
  }
};

class HsaModule final : public Module {
 public:
  HsaModule(std::shared_ptr<Context> context, const format::FatBinary& fatbin, size_t image_index)
      : loaded_{std::move(context)}, label_(fatbin.label()) {
    Context& ctx = *loaded_.context;
    const Api& api = *ctx.api;
    const format::Image& image = fatbin.manifest().images[image_index];
    description_ = "hsaco " + image.arch;
    info_ = ImageInfo::of(image);
    std::vector<std::byte> data = fatbin.image_data(image_index);

    hsa_code_object_reader_t reader{0};
    ctx.check(api.hsa_code_object_reader_create_from_memory(data.data(), data.size(), &reader),
              "reading code object '" + description_ + "' of " + label_);
    hsa_status_t status = api.hsa_executable_create_alt(ctx.profile, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                                        nullptr, &loaded_.executable);
    if (status == HSA_STATUS_SUCCESS)
      status = api.hsa_executable_load_agent_code_object(loaded_.executable, ctx.agent, reader, nullptr, nullptr);
    if (status == HSA_STATUS_SUCCESS) status = api.hsa_executable_freeze(loaded_.executable, nullptr);
    api.hsa_code_object_reader_destroy(reader);
    ctx.check(status, "loading code object '" + description_ + "' of " + label_);

    for (const format::Kernel& k : fatbin.manifest().kernels) {
      Entry entry;
      entry.name = k.name;
      entry.block = k.block;
      entry.layout = kernarg_layout(k.params);
      bool in_image = std::find(image.kernels.begin(), image.kernels.end(), k.symbol) != image.kernels.end();
      if (in_image) load_entry(k, entry);
      entries_.push_back(std::move(entry));
    }
  }

  void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) override {
    if (kernel >= entries_.size())
      throw Error(ErrorCode::InvalidArgument, "hip: kernel index " + std::to_string(kernel) + " out of range (" +
                                                  label_ + " has " + std::to_string(entries_.size()) + " kernels)");
    const Entry& entry = entries_[kernel];
    Context& ctx = *loaded_.context;
    if (!entry.kernel_object)
      throw Error(ErrorCode::NotFound,
                  "hip: kernel '" + entry.name + "' is not in the loaded image '" + description_ + "' of " + label_);
    ctx.throw_if_queue_failed("launching kernel '" + entry.name + "'");
    ctx.reclaim_completed();

    std::vector<uint64_t> addresses(args.size());
    std::vector<KernargValue> values(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].buffer) {
        auto* buffer = dynamic_cast<HsaBuffer*>(args[i].buffer);
        if (!buffer || buffer->context() != loaded_.context)
          throw Error(ErrorCode::InvalidArgument, "hip: kernel '" + entry.name + "' argument " + std::to_string(i) +
                                                      ": the buffer was allocated on another device or backend");
        addresses[i] = reinterpret_cast<uintptr_t>(buffer->pointer);
        values[i] = {&addresses[i], sizeof(uint64_t)};
      } else {
        values[i] = {args[i].scalar, args[i].scalar_size};
      }
    }
    std::vector<std::byte> kernargs = pack_kernargs(entry.layout, values);
    hsa_kernel_dispatch_packet_t packet =
        make_dispatch_packet(entry.block, grid, entry.kernel_object, nullptr, entry.group_segment_size,
                             entry.private_segment_size, hsa_signal_t{0});

    // The kernarg segment must outlive the dispatch: it is freed with its signal once complete.
    void* kernarg = ctx.allocate(ctx.regions.kernarg, std::max<size_t>(kernargs.size(), 16), "allocating kernargs");
    std::memcpy(kernarg, kernargs.data(), kernargs.size());
    hsa_signal_t signal{0};
    if (hsa_status_t s = ctx.api->hsa_signal_create(1, 0, nullptr, &signal); s != HSA_STATUS_SUCCESS) {
      ctx.api->hsa_memory_free(kernarg);
      ctx.check(s, "creating a completion signal");
    }
    ctx.in_flight.push_back({signal, kernarg});
    packet.kernarg_address = kernarg;
    packet.completion_signal = signal;

    hsa_queue_t* queue = ctx.queue;
    uint64_t index = ctx.api->hsa_queue_add_write_index_scacq_screl(queue, 1);
    while (index - ctx.api->hsa_queue_load_read_index_scacquire(queue) >= queue->size)
      ctx.throw_if_queue_failed("waiting for room in the queue");   // the ring is full: the GPU drains it
    auto* slot = static_cast<hsa_kernel_dispatch_packet_t*>(queue->base_address) + (index & (queue->size - 1));
    // Everything but the header first; the header last, atomically, with release semantics.
    std::memcpy(reinterpret_cast<std::byte*>(slot) + 4, reinterpret_cast<const std::byte*>(&packet) + 4,
                sizeof packet - 4);
    __atomic_store_n(reinterpret_cast<uint32_t*>(slot), dispatch_header_and_setup(), __ATOMIC_RELEASE);
    ctx.api->hsa_signal_store_screlease(queue->doorbell_signal, static_cast<hsa_signal_value_t>(index));
    ctx.last_kernel = entry.name;
  }

  std::string image_description() const override { return description_; }
  const ImageInfo& image_info() const override { return info_; }

 private:
  struct Entry {
    std::string name;
    std::array<uint32_t, 3> block{};
    KernargLayout layout;
    uint64_t kernel_object = 0;   // 0 when the loaded image lacks this kernel
    uint32_t group_segment_size = 0;
    uint32_t private_segment_size = 0;
  };

  void load_entry(const format::Kernel& k, Entry& entry) {
    Context& ctx = *loaded_.context;
    const Api& api = *ctx.api;
    // Code object v3+ names a kernel's descriptor "<symbol>.kd".
    hsa_executable_symbol_t symbol{0};
    const std::string descriptor = k.symbol + ".kd";
    if (hsa_status_t s = api.hsa_executable_get_symbol_by_name(loaded_.executable, descriptor.c_str(), &ctx.agent,
                                                               &symbol);
        s != HSA_STATUS_SUCCESS)
      throw Error(ErrorCode::InvalidFatBinary, "hip: image '" + description_ + "' of " + label_ + " lists kernel '" +
                                                   k.name + "' but has no symbol '" + descriptor +
                                                   "': " + api.error_text(s));
    uint32_t kernarg_size = 0;
    ctx.check(api.hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &entry.kernel_object),
              "reading kernel '" + k.name + "'");
    ctx.check(api.hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                                 &kernarg_size),
              "reading kernel '" + k.name + "'");
    ctx.check(api.hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                                 &entry.group_segment_size),
              "reading kernel '" + k.name + "'");
    ctx.check(api.hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                                 &entry.private_segment_size),
              "reading kernel '" + k.name + "'");
    // A code object whose kernel expects more (hidden arguments) or other arguments than the
    // manifest describes would read garbage: refuse it here rather than launch it.
    if (kernarg_size != entry.layout.size)
      throw Error(ErrorCode::InvalidFatBinary,
                  "hip: kernel '" + k.name + "' in image '" + description_ + "' of " + label_ + " has a " +
                      std::to_string(kernarg_size) + "-byte kernarg segment; its manifest parameters take " +
                      std::to_string(entry.layout.size) + " bytes (docs/abi.md)");
    uint32_t threads = k.block[0] * k.block[1] * k.block[2];
    if (threads > ctx.max_workgroup)
      throw Error(ErrorCode::InvalidFatBinary, "hip: kernel '" + k.name + "' has a block of " + std::to_string(threads) +
                                                   " threads; " + ctx.name + " allows " +
                                                   std::to_string(ctx.max_workgroup));
  }

  LoadedExecutable loaded_;
  std::string description_;
  ImageInfo info_;
  std::string label_;
  std::vector<Entry> entries_;
};

class HsaDevice final : public Device {
 public:
  explicit HsaDevice(std::shared_ptr<Context> context) : context_(std::move(context)) {}

  std::string backend_name() const override { return "hip"; }
  std::string device_name() const override { return context_->name; }

  std::unique_ptr<Buffer> alloc(size_t bytes) override { return std::make_unique<HsaBuffer>(context_, bytes); }

  void upload(Buffer& dst, const void* src, size_t bytes) override {
    HsaBuffer& buffer = own(dst, "upload");
    check_size("upload", bytes, buffer.bytes);
    if (bytes == 0) return;
    context_->wait_all("upload");   // a launch still in flight may read the old contents
    auto staging = context_->staging(bytes);
    std::memcpy(staging.get(), src, bytes);
    context_->check(context_->api->hsa_memory_copy(buffer.pointer, staging.get(), bytes),
                    "upload of " + std::to_string(bytes) + " bytes");
  }

  void download(const Buffer& src, void* dst, size_t bytes) override {
    const HsaBuffer& buffer = own(const_cast<Buffer&>(src), "download");
    check_size("download", bytes, buffer.bytes);
    if (bytes == 0) return;
    context_->wait_all("download");
    auto staging = context_->staging(bytes);
    context_->check(context_->api->hsa_memory_copy(staging.get(), buffer.pointer, bytes),
                    "download of " + std::to_string(bytes) + " bytes");
    std::memcpy(dst, staging.get(), bytes);
  }

  std::vector<size_t> images_to_load(const format::FatBinary& fatbin) const override {
    const std::optional<size_t> index = choose_hsaco_image(fatbin.manifest(), context_->processor);
    if (!index) return {};
    return {*index};
  }

  std::unique_ptr<Module> load(const format::FatBinary& fatbin) override {
    std::optional<size_t> index = choose_hsaco_image(fatbin.manifest(), context_->processor);
    if (!index)
      throw Error(ErrorCode::NotFound, "hip: " + fatbin.label() + " has no image for " + context_->name + " (" +
                                           context_->processor + "): it needs hsaco " + context_->processor +
                                           "; the file has: " + format::describe_images(fatbin.manifest()));
    return std::make_unique<HsaModule>(context_, fatbin, *index);
  }

  void synchronize() override { context_->wait_all("synchronize"); }

  void* native_stream() const override { return context_->queue; }
  void* native_device() const override { return reinterpret_cast<void*>(static_cast<uintptr_t>(context_->agent.handle)); }

  std::unique_ptr<Buffer> import_memory(uint64_t address, size_t) override {
    throw Error(ErrorCode::InvalidArgument, "hip: importing foreign memory (at " + std::to_string(address) +
                                                ") is not supported by the hip backend yet");
  }

 private:
  HsaBuffer& own(Buffer& b, const char* what) const {
    auto* buffer = dynamic_cast<HsaBuffer*>(&b);
    if (!buffer || buffer->context() != context_)
      throw Error(ErrorCode::InvalidArgument,
                  std::string("hip: ") + what + ": the buffer was allocated on another device or backend");
    return *buffer;
  }
  static void check_size(const char* what, size_t bytes, size_t have) {
    if (bytes > have)
      throw Error(ErrorCode::InvalidArgument, std::string("hip: ") + what + " of " + std::to_string(bytes) +
                                                  " bytes into a buffer of " + std::to_string(have) + " bytes");
  }
  std::shared_ptr<Context> context_;
};

size_t count_devices(std::string& why_not) {
  std::shared_ptr<Runtime> runtime = start_runtime(why_not);
  if (!runtime) return 0;
  size_t n = gpu_agents(*runtime->api).size();
  if (n == 0) why_not = "the HSA runtime (" + runtime->api->library + ") reports no GPU agent";
  return n;
}

std::unique_ptr<Device> open_device(size_t index, size_t& device_count, std::string& why_not) {
  device_count = 0;
  std::shared_ptr<Runtime> runtime = start_runtime(why_not);
  if (!runtime) return nullptr;
  const Api& api = *runtime->api;
  std::vector<hsa_agent_t> gpus = gpu_agents(api);
  device_count = gpus.size();
  if (gpus.empty()) {
    why_not = "the HSA runtime (" + api.library + ") reports no GPU agent";
    return nullptr;
  }
  if (index >= gpus.size()) {
    why_not = "the HSA runtime reports " + std::to_string(gpus.size()) + " GPU agent(s)";
    return nullptr;
  }

  auto context = std::make_shared<Context>();
  context->runtime = runtime;
  context->api = &api;
  context->agent = gpus[index];
  try {
    context->processor = processor_of(agent_string(api, context->agent, HSA_AGENT_INFO_NAME));
    context->name = agent_string(api, context->agent, HSA_AMD_AGENT_INFO_PRODUCT_NAME);
    if (context->name.empty()) context->name = context->processor;
    context->check(api.hsa_agent_get_info(context->agent, HSA_AGENT_INFO_PROFILE, &context->profile),
                   "reading the agent's profile");
    context->check(api.hsa_agent_get_info(context->agent, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, &context->max_workgroup),
                   "reading the agent's workgroup limit");
    context->regions = find_regions(api, context->agent);
    if (!context->regions.device.handle || !context->regions.kernarg.handle) {
      why_not = context->name + " (" + context->processor + ") has no " +
                (context->regions.device.handle ? "kernarg" : "global device") + " memory region";
      return nullptr;
    }
    uint32_t max_packets = 0;
    context->check(api.hsa_agent_get_info(context->agent, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &max_packets),
                   "reading the agent's queue limit");
    context->check(api.hsa_queue_create(context->agent, std::min(kQueuePackets, max_packets), HSA_QUEUE_TYPE_SINGLE,
                                        on_queue_error, context.get(), UINT32_MAX, UINT32_MAX, &context->queue),
                   "hsa_queue_create");
  } catch (const Error& e) {
    why_not = e.what();
    return nullptr;
  }
  return std::make_unique<HsaDevice>(std::move(context));
}

}  // namespace
}  // namespace hsa

extern const Factory hsa_factory;
const Factory hsa_factory{"hip", &hsa::count_devices, &hsa::open_device};

}  // namespace quiver::backend
