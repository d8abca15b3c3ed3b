// CPU backend device: host allocations, the worker pool, and the factory registry.cpp lists.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/tsan_fibers.h"

namespace quiver::backend::cpu {
namespace {

constexpr size_t kAlign = 64;   // a cache line; also enough for every vector load the ABI allows

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void* aligned_or_throw(size_t bytes, const char* what) {
  const size_t rounded = round_up(bytes == 0 ? 1 : bytes, kAlign);
  if (rounded < bytes) throw Error(ErrorCode::OutOfMemory, std::string("cpu backend: ") + what + ": size overflows");
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) {
    throw Error(ErrorCode::OutOfMemory, std::string("cpu backend: cannot allocate ") +
                                            std::to_string(bytes) + " bytes for " + what);
  }
  return p;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(" \t", colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  }
  return std::string(host_arch()) + " CPU";
}

constexpr size_t kMaxCpuDevices = 64;

size_t count_cpu(std::string& why_not) { return cpu_device_count(why_not); }

std::unique_ptr<Device> open_cpu(size_t index, size_t& device_count, std::string& why_not) {
  device_count = cpu_device_count(why_not);
  if (device_count == 0) return nullptr;
  if (index >= device_count) {
    why_not = "there are " + std::to_string(device_count) + " cpu device(s) (QUIVER_CPU_DEVICES)";
    return nullptr;
  }
  try {
    return std::make_unique<CpuDevice>();
  } catch (const std::exception& e) {
    why_not = e.what();
    return nullptr;
  }
}

}  // namespace

std::string_view host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#endif
}

std::vector<std::string_view> host_image_archs() {
  std::vector<std::string_view> archs;
#if defined(__x86_64__)
  // The x86-64 micro-architecture levels of the CPU target's images (docs/abi.md "CPU"), by
  // the features each adds that compiled code uses.
  __builtin_cpu_init();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                  __builtin_cpu_supports("f16c");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
  if (v4) archs.push_back("x86_64_v4");
  if (v3) archs.push_back("x86_64_v3");
#endif
  archs.push_back(host_arch());
  return archs;
}

int find_cpu_image(const format::FatBinary& fatbin, std::string& archs_tried) {
  std::vector<std::string_view> archs = host_image_archs();
  if (const char* forced = std::getenv("QUIVER_CPU_ARCH"); forced != nullptr && *forced != '\0') {
    if (std::find(archs.begin(), archs.end(), std::string_view(forced)) == archs.end()) {
      std::string runs;
      for (std::string_view a : archs) runs += (runs.empty() ? "" : ", ") + std::string(a);
      throw Error(ErrorCode::InvalidArgument,
                  "QUIVER_CPU_ARCH='" + std::string(forced) + "' is not an image arch this CPU runs (" + runs + ")");
    }
    archs = {std::string_view(forced)};
  }
  archs_tried.clear();
  for (std::string_view arch : archs) {
    archs_tried += (archs_tried.empty() ? "" : " or ") + std::string(arch);
    const int index = fatbin.find_image(format::Target::CPU, arch);
    if (index >= 0) return index;
  }
  return -1;
}

uint32_t cpu_subgroup_width(std::string_view arch) {
  if (const char* env = std::getenv("QUIVER_CPU_SUBGROUP_SIZE"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(env, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1 || n > 128 || (n & (n - 1)) != 0)
      throw Error(ErrorCode::InvalidArgument, std::string("QUIVER_CPU_SUBGROUP_SIZE=") + env +
                                                  " is not a subgroup size (a power of two from 1 to 128)");
    return static_cast<uint32_t>(n);
  }
  if (arch == "x86_64_v4") return 16;
  if (arch == "x86_64_v3") return 8;
  return 4;   // x86_64 (SSE), aarch64 (NEON): 128-bit vectors
}

size_t cpu_device_count(std::string& why_not) {
  const char* env = std::getenv("QUIVER_CPU_DEVICES");
  if (env == nullptr || *env == '\0') return 1;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || n < 1 || n > static_cast<long long>(kMaxCpuDevices)) {
    why_not = std::string("QUIVER_CPU_DEVICES=") + env + " is not a device count (a whole number from 1 to " +
              std::to_string(kMaxCpuDevices) + ")";
    return 0;
  }
  return static_cast<size_t>(n);
}

CpuBuffer::CpuBuffer(size_t size) : data_(aligned_or_throw(size, "a buffer")) { bytes = size; }
CpuBuffer::CpuBuffer(void* foreign, size_t size) : data_(foreign), owned_(false) { bytes = size; }
CpuBuffer::~CpuBuffer() {
  if (owned_) std::free(data_);
}

WorkerScratch::~WorkerScratch() {
  for (FiberSlot& slot : fibers) QV_TSAN_DESTROY_FIBER(slot.tsan_fiber);
}

AlignedScratch::~AlignedScratch() { std::free(data_); }

void* AlignedScratch::reserve(size_t bytes) {
  if (data_ == nullptr || bytes > bytes_) {
    void* p = aligned_or_throw(bytes, "block shared memory");
    std::free(data_);
    data_ = p;
    bytes_ = round_up(bytes == 0 ? 1 : bytes, kAlign);
  }
  return data_;
}

namespace {

// QUIVER_CPU_THREADS when set (1 to 1024), else the CPUs this process may use.
unsigned worker_threads() {
  const char* env = std::getenv("QUIVER_CPU_THREADS");
  if (env == nullptr || *env == '\0') return usable_cpus();
  const std::string text = env;
  unsigned long n = 0;
  bool digits = text.size() <= 4 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) n = std::stoul(text);
  if (!digits || n < 1 || n > 1024)
    throw Error(ErrorCode::BackendUnavailable, "QUIVER_CPU_THREADS=" + text + " is not a thread count (1 to 1024)");
  return static_cast<unsigned>(n);
}

std::shared_ptr<WorkerPool> process_workers() {
  static std::mutex mutex;
  static std::weak_ptr<WorkerPool> current;
  std::lock_guard lock(mutex);
  if (std::shared_ptr<WorkerPool> alive = current.lock()) return alive;
  auto made = std::make_shared<WorkerPool>(worker_threads());
  current = made;
  return made;
}

}  // namespace

CpuDevice::CpuDevice() : workers_(process_workers()) {
  name_ = cpu_model_name() + " (" + std::to_string(workers_->workers) + " threads)";
}

CpuDevice::~CpuDevice() = default;

std::unique_ptr<Buffer> CpuDevice::alloc(size_t bytes) { return std::make_unique<CpuBuffer>(bytes); }

void CpuDevice::upload(Buffer& dst, const void* src, size_t bytes) {
  std::memcpy(static_cast<CpuBuffer&>(dst).data(), src, bytes);
}

void CpuDevice::download(const Buffer& src, void* dst, size_t bytes) {
  std::memcpy(dst, static_cast<const CpuBuffer&>(src).data(), bytes);
}

std::unique_ptr<Buffer> CpuDevice::import_memory(uint64_t address, size_t bytes) {
  // Host memory is one address space: any host pointer is usable as it is.
  return std::make_unique<CpuBuffer>(reinterpret_cast<void*>(static_cast<uintptr_t>(address)), bytes);
}

std::unique_ptr<Module> CpuDevice::load(const format::FatBinary& fatbin) {
  return load_cpu_module(*this, fatbin);
}

std::vector<size_t> CpuDevice::images_to_load(const format::FatBinary& fatbin) const {
  std::string archs;
  const int index = find_cpu_image(fatbin, archs);   // as load_cpu_module
  if (index < 0) return {};
  return {static_cast<size_t>(index)};
}

void CpuDevice::run_on_workers(const std::function<void(unsigned, WorkerScratch&)>& job) {
  std::lock_guard lock(launch_mutex_);
  WorkerPool& w = *workers_;
  {
    std::lock_guard start(w.start);
    if (!w.pool) {
      w.scratch.resize(w.workers);
      for (auto& s : w.scratch) s = std::make_unique<WorkerScratch>();
      w.pool = std::make_unique<ThreadPool>(w.workers);
    }
  }
  w.pool->run_on_all([&](unsigned worker) { job(worker, *w.scratch[worker]); });
}

}  // namespace quiver::backend::cpu

namespace quiver::backend {
// Declared (and listed last, the fallback) in registry.cpp.
extern const Factory cpu_factory{"cpu", &cpu::count_cpu, &cpu::open_cpu};
}  // namespace quiver::backend
