// CPU backend device: host allocations, the worker pool, and the factory registry.cpp lists.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "backends/cpu/cpu_backend.h"

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

std::unique_ptr<Device> open_cpu(std::string& why_not) {
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

CpuBuffer::CpuBuffer(size_t size) : data_(aligned_or_throw(size, "a buffer")) { bytes = size; }
CpuBuffer::~CpuBuffer() { std::free(data_); }

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

CpuDevice::CpuDevice() : workers_(std::max(1u, std::thread::hardware_concurrency())) {
  name_ = cpu_model_name() + " (" + std::to_string(workers_) + " threads)";
}

CpuDevice::~CpuDevice() = default;

std::unique_ptr<Buffer> CpuDevice::alloc(size_t bytes) { return std::make_unique<CpuBuffer>(bytes); }

void CpuDevice::upload(Buffer& dst, const void* src, size_t bytes) {
  std::memcpy(static_cast<CpuBuffer&>(dst).data(), src, bytes);
}

void CpuDevice::download(const Buffer& src, void* dst, size_t bytes) {
  std::memcpy(dst, static_cast<const CpuBuffer&>(src).data(), bytes);
}

std::unique_ptr<Module> CpuDevice::load(const format::FatBinary& fatbin) {
  return load_cpu_module(*this, fatbin);
}

void CpuDevice::run_on_workers(const std::function<void(unsigned, WorkerScratch&)>& job) {
  std::lock_guard lock(launch_mutex_);
  if (!pool_) {
    scratch_.resize(workers_);
    for (auto& s : scratch_) s = std::make_unique<WorkerScratch>();
    pool_ = std::make_unique<ThreadPool>(workers_);
  }
  pool_->run_on_all([&](unsigned worker) { job(worker, *scratch_[worker]); });
}

}  // namespace quiver::backend::cpu

namespace quiver::backend {
// Declared (and listed last, the fallback) in registry.cpp.
extern const Factory cpu_factory{"cpu", &cpu::open_cpu};
}  // namespace quiver::backend
