// CPU backend module: loads the host's CPU image (an ELF shared object) from memory and runs
// its kernels following docs/abi.md "CPU".
#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/tsan_fibers.h"

namespace quiver::backend::cpu {
namespace {

// Threads per block the fiber scheduler accepts: each thread needs its own stack.
constexpr uint64_t kMaxBarrierBlockThreads = 4096;
// docs/abi.md "CPU": the entry of a barrier kernel that runs its whole block in one call.
constexpr std::string_view kBlockEntryPrefix = "__qv_block_";

struct KernelEntry {
  std::string name;
  qv_cpu_kernel_fn fn = nullptr;   // null when the image does not contain the kernel
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
  bool uses_barrier = false;
  bool fibers = false;             // uses_barrier and no block entry: one fiber per thread
  uint32_t subgroup_size = 1;      // qv_cpu_ctx::subgroup_size for its blocks
  std::string targets;             // for the "not in this image" message
};

std::string image_list(const format::Manifest& m) {
  std::string s;
  for (const format::Image& img : m.images) {
    if (!s.empty()) s += ", ";
    s += std::string(format::to_string(img.target)) + " " + img.arch;
  }
  return s.empty() ? "(none)" : s;
}

// Rejects what dlopen would reject less clearly: not ELF, wrong class / byte order / machine,
// or not a shared object.
void check_elf(const std::vector<std::byte>& data, const std::string& what) {
  auto fail = [&](const std::string& why) {
    throw Error(ErrorCode::InvalidFatBinary, what + " is not a loadable shared object: " + why);
  };
  if (data.size() < sizeof(Elf64_Ehdr)) fail("only " + std::to_string(data.size()) + " bytes");
  Elf64_Ehdr h;
  std::memcpy(&h, data.data(), sizeof h);
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) fail("no ELF magic");
  if (h.e_ident[EI_CLASS] != ELFCLASS64) fail("not a 64-bit ELF file");
  if (h.e_ident[EI_DATA] != ELFDATA2LSB) fail("not little-endian");
  if (h.e_type != ET_DYN) fail("ELF type " + std::to_string(h.e_type) + ", expected ET_DYN");
#if defined(__x86_64__)
  const uint16_t machine = EM_X86_64;
#else
  const uint16_t machine = EM_AARCH64;
#endif
  if (h.e_machine != machine) {
    fail("ELF machine " + std::to_string(h.e_machine) + ", this host needs " + std::to_string(machine));
  }
}

// An open file descriptor, closed with its owner.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OwnedFd& operator=(OwnedFd&&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// A shared object loaded from memory: the dlopen handle and the memfd it was opened through,
// both released with their owner, so that a module whose construction throws leaks neither.
class LoadedImage {
 public:
  LoadedImage(void* handle, OwnedFd fd) : handle_(handle), fd_(std::move(fd)) {}
  LoadedImage(LoadedImage&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)), fd_(std::move(other.fd_)) {}
  LoadedImage& operator=(LoadedImage&&) = delete;
  ~LoadedImage() {
    if (handle_ != nullptr) dlclose(handle_);   // before the fd closes (~OwnedFd runs after)
  }
  void* handle() const { return handle_; }

 private:
  void* handle_;
  OwnedFd fd_;
};

// Loads a shared object from memory: memfd_create + dlopen("/proc/self/fd/N"), so nothing is
// written to the file system. The memfd stays open as long as the handle: glibc's dlopen returns
// the already-loaded object when the path string matches one, and a closed fd's number is the
// next memfd's, so a second module loaded while the first is alive got the first one's handle
// ("symbol ... missing" for every kernel of the second fat binary).
LoadedImage dlopen_from_memory(const std::vector<std::byte>& data, const std::string& what) {
  OwnedFd fd(memfd_create("quiver-cpu-image", MFD_CLOEXEC));
  if (fd.get() < 0) {
    throw Error(ErrorCode::DeviceError, "cannot load " + what + ": memfd_create: " + std::strerror(errno));
  }
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = write(fd.get(), data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      throw Error(ErrorCode::DeviceError, "cannot load " + what + ": writing the memfd: " + std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw Error(ErrorCode::InvalidFatBinary, "cannot load " + what + ": dlopen: " + (err ? err : "unknown error"));
  }
  return LoadedImage(handle, std::move(fd));
}

// barrier() of a kernel run as one call per block (barrier-free, or its barriers compiled into
// loops over the threads): there is nothing to wait for. Record the inconsistency and report it after the
// launch (an exception must not unwind through kernel code).
void stray_barrier(qv_cpu_ctx* ctx) noexcept {
  static_cast<std::atomic<bool>*>(ctx->runtime)->store(true, std::memory_order_relaxed);
}

// barrier() of a fiber: go back to the worker's scheduler, which resumes every other thread of
// the block up to its own barrier before resuming this one.
void fiber_barrier(qv_cpu_ctx* ctx) noexcept {
  auto* slot = static_cast<FiberSlot*>(ctx->runtime);
  QV_TSAN_SWITCH_TO(slot->worker->tsan_scheduler);
  qv_cpu_fiber_switch(&slot->sp, slot->worker->scheduler_sp);
}

// Never returns, so under ThreadSanitizer it must not be instrumented (tsan_fibers.h).
QV_NO_TSAN void fiber_main(void* p) noexcept {
  auto* slot = static_cast<FiberSlot*>(p);
  slot->worker->fn(slot->worker->args, &slot->ctx);
  slot->done = true;
  QV_TSAN_SWITCH_TO(slot->worker->tsan_scheduler);
  qv_cpu_fiber_switch(&slot->sp, slot->worker->scheduler_sp);
  __builtin_unreachable();   // a finished fiber is never resumed
}

void block_coords(uint64_t linear, const std::array<uint32_t, 3>& dims, uint32_t out[3]) {
  out[0] = static_cast<uint32_t>(linear % dims[0]);
  out[1] = static_cast<uint32_t>((linear / dims[0]) % dims[1]);
  out[2] = static_cast<uint32_t>(linear / (uint64_t(dims[0]) * dims[1]));
}

class CpuModule final : public Module {
 public:
  CpuModule(CpuDevice& device, LoadedImage&& image, ImageInfo info, std::vector<KernelEntry> kernels,
            std::string label)
      : device_(device), image_(std::move(image)), info_(std::move(info)), kernels_(std::move(kernels)),
        label_(std::move(label)) {}

  std::string image_description() const override { return "cpu " + info_.arch; }
  const ImageInfo& image_info() const override { return info_; }

  void launch(size_t kernel, Grid grid, std::span<const LaunchArg> args) override {
    const KernelEntry& k = kernels_.at(kernel);
    if (k.fn == nullptr) {
      throw Error(ErrorCode::NotFound, "kernel '" + k.name + "' is not in the " + image_description() +
                                           " image of '" + label_ + "' (it was built for: " +
                                           k.targets + ")");
    }
    // args[i] points at a void* holding the buffer's host pointer, or at the scalar's value
    // (copied into 8-byte aligned slots so the kernel may load it with any natural alignment).
    std::vector<void*> pointers(args.size());
    std::vector<uint64_t> scalars(args.size());
    std::vector<void*> argv(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].buffer != nullptr) {
        pointers[i] = static_cast<CpuBuffer*>(args[i].buffer)->data();
        argv[i] = &pointers[i];
      } else {
        std::memcpy(&scalars[i], args[i].scalar, std::min<size_t>(args[i].scalar_size, 8));
        argv[i] = &scalars[i];
      }
    }
    const std::array<uint32_t, 3> grid_dims{grid.x, grid.y, grid.z};
    const uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
    const uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
    if (k.fibers && threads > kMaxBarrierBlockThreads) {
      throw Error(ErrorCode::InvalidArgument,
                  "kernel '" + k.name + "': blocks of " + std::to_string(threads) +
                      " threads with barriers exceed the cpu backend's limit of " +
                      std::to_string(kMaxBarrierBlockThreads));
    }
    // One-call blocks are cheap, so workers take them in chunks; fiber blocks one by one.
    const uint64_t chunk =
        k.fibers ? 1 : std::max<uint64_t>(1, blocks / (uint64_t(device_.worker_count()) * 16));
    std::atomic<uint64_t> next{0};
    std::atomic<bool> stray{false};

    device_.run_on_workers([&](unsigned, WorkerScratch& w) {
      void* shared = w.shared.reserve(k.shared_bytes);
      if (k.fibers) {
        w.stacks.reserve(threads);
        if (w.fibers.size() < threads) w.fibers.resize(threads);
        w.fn = k.fn;
        w.args = argv.data();
      }
      qv_cpu_ctx ctx{};
      for (;;) {
        const uint64_t first = next.fetch_add(chunk, std::memory_order_relaxed);
        if (first >= blocks) break;
        const uint64_t last = std::min(blocks, first + chunk);
        for (uint64_t b = first; b < last; ++b) {
          if (k.fibers) {
            run_fiber_block(w, k, grid_dims, b, shared, threads);
            continue;
          }
          ctx = qv_cpu_ctx{};
          block_coords(b, grid_dims, ctx.block_id);
          std::copy(k.block.begin(), k.block.end(), ctx.block_dim);
          std::copy(grid_dims.begin(), grid_dims.end(), ctx.grid_dim);
          ctx.shared = shared;
          ctx.barrier = &stray_barrier;
          ctx.runtime = &stray;
          ctx.subgroup_size = k.subgroup_size;
          k.fn(argv.data(), &ctx);
        }
      }
    });
    if (stray.load()) {
      throw Error(ErrorCode::DeviceError,
                  "kernel '" + k.name + "' in '" + label_ +
                      "' called qv::barrier() although its manifest says it uses no barriers; "
                      "its results are undefined (the fat binary is inconsistent)");
    }
  }

 private:
  // Runs one block of a barrier kernel: every thread is a fiber; each round resumes every
  // unfinished fiber once, and each runs until its next barrier() or its end, so no thread
  // passes barrier n before all have reached it. Threads that have returned no longer take
  // part (as on GPUs that count exited threads as arrived).
  static void run_fiber_block(WorkerScratch& w, const KernelEntry& k,
                              const std::array<uint32_t, 3>& grid_dims, uint64_t block,
                              void* shared, uint64_t threads) {
    uint32_t block_id[3];
    block_coords(block, grid_dims, block_id);
    w.tsan_scheduler = QV_TSAN_CURRENT_FIBER();
    for (uint64_t t = 0; t < threads; ++t) {
      FiberSlot& slot = w.fibers[t];
      if (slot.tsan_fiber == nullptr) slot.tsan_fiber = QV_TSAN_CREATE_FIBER();
      slot.ctx = qv_cpu_ctx{};
      block_coords(t, k.block, slot.ctx.thread_id);
      std::copy(block_id, block_id + 3, slot.ctx.block_id);
      std::copy(k.block.begin(), k.block.end(), slot.ctx.block_dim);
      std::copy(grid_dims.begin(), grid_dims.end(), slot.ctx.grid_dim);
      slot.ctx.shared = shared;
      slot.ctx.barrier = &fiber_barrier;
      slot.ctx.runtime = &slot;
      slot.ctx.subgroup_size = k.subgroup_size;
      slot.done = false;
      slot.worker = &w;
      slot.sp = fiber_prepare(w.stacks.top(t), &fiber_main, &slot);
    }
    uint64_t live = threads;
    while (live > 0) {
      for (uint64_t t = 0; t < threads; ++t) {
        FiberSlot& slot = w.fibers[t];
        if (slot.done) continue;
        QV_TSAN_SWITCH_TO(slot.tsan_fiber);
        qv_cpu_fiber_switch(&w.scheduler_sp, slot.sp);
        if (slot.done) --live;
      }
    }
  }

  CpuDevice& device_;
  LoadedImage image_;
  ImageInfo info_;
  std::vector<KernelEntry> kernels_;
  std::string label_;
};

}  // namespace

std::unique_ptr<Module> load_cpu_module(CpuDevice& device, const format::FatBinary& fatbin) {
  const format::Manifest& m = fatbin.manifest();
  std::string archs;
  const int index = find_cpu_image(fatbin, archs);
  if (index < 0) {
    throw Error(ErrorCode::NotFound, "'" + fatbin.label() + "' has no cpu image for " + archs +
                                         "; its images: " + image_list(m));
  }
  const format::Image& image = m.images.at(static_cast<size_t>(index));
  const std::string what = "the cpu " + image.arch + " image of '" + fatbin.label() + "'";
  const std::vector<std::byte> data = fatbin.image_data(static_cast<size_t>(index));
  check_elf(data, what);
  LoadedImage loaded = dlopen_from_memory(data, what);
  void* handle = loaded.handle();
  if (const void* abi = dlsym(handle, kCpuAbiSymbol)) {
    uint32_t version;
    std::memcpy(&version, abi, sizeof version);
    if (version == 0 || version > kCpuAbiVersion)
      throw Error(ErrorCode::InvalidFatBinary,
                  what + " is built for CPU ABI " + std::to_string(version) + "; this runtime runs CPU ABI 1 to " +
                      std::to_string(kCpuAbiVersion) + " (docs/abi.md \"CPU\"): load it with a libquiver as new " +
                      "as the quiverc that built it");
  }
  dlerror();

  // A set, not a scan of the image's list per kernel: 4096 x 4096 comparisons otherwise.
  const std::unordered_set<std::string_view> in_image(image.kernels.begin(), image.kernels.end());
  const uint32_t width = cpu_subgroup_width(image.arch);
  std::vector<KernelEntry> kernels;
  kernels.reserve(m.kernels.size());
  for (const format::Kernel& mk : m.kernels) {
    KernelEntry e;
    e.name = mk.name;
    e.block = mk.block;
    e.shared_bytes = mk.shared_bytes;
    e.uses_barrier = mk.uses_barrier;
    for (format::Target t : mk.targets) {
      if (!e.targets.empty()) e.targets += ", ";
      e.targets += format::to_string(t);
    }
    if (e.targets.empty()) e.targets = "no target";
    for (uint32_t d : mk.block) {
      if (d == 0) {
        throw Error(ErrorCode::InvalidFatBinary, "kernel '" + mk.name + "' in '" + fatbin.label() +
                                                     "' has a zero block dimension");
      }
    }
    const uint64_t threads = uint64_t(mk.block[0]) * mk.block[1] * mk.block[2];
    while (e.subgroup_size * 2 <= width && threads % (e.subgroup_size * 2) == 0) e.subgroup_size *= 2;
    if (in_image.contains(mk.symbol)) {
      // A barrier kernel the compiler turned into loops over the threads exports its entry
      // under the block-entry name (docs/abi.md "CPU"); the others run one fiber per thread.
      void* sym = nullptr;
      if (mk.uses_barrier) sym = dlsym(handle, (std::string(kBlockEntryPrefix) + mk.symbol).c_str());
      e.fibers = mk.uses_barrier && sym == nullptr;
      dlerror();
      if (sym == nullptr) sym = dlsym(handle, mk.symbol.c_str());
      if (sym == nullptr) {
        const char* err = dlerror();
        throw Error(ErrorCode::InvalidFatBinary,
                    "kernel '" + mk.name + "': symbol '" + mk.symbol + "' listed in " + what +
                        " is missing from it: " + (err ? err : "dlsym returned null"));
      }
      e.fn = reinterpret_cast<qv_cpu_kernel_fn>(sym);
    }
    kernels.push_back(std::move(e));
  }
  return std::make_unique<CpuModule>(device, std::move(loaded), ImageInfo::of(image), std::move(kernels),
                                     fatbin.label());
}

}  // namespace quiver::backend::cpu
