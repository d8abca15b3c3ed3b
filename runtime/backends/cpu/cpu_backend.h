// The CPU backend: runs the "cpu" image of a fat binary (an ELF shared object, docs/abi.md
// "CPU") on the host. Blocks run in parallel on a per-device thread pool; the threads of a
// block that uses qv::barrier() run as fibers on one worker.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_abi.h"
#include "backends/cpu/fiber.h"
#include "backends/cpu/thread_pool.h"

namespace quiver::backend::cpu {

// "x86_64" or "aarch64": the arch string of the CPU image this host runs.
std::string_view host_arch();

// The arch strings of the CPU images this host runs, best first: x86_64_v4 (AVX-512), x86_64_v3
// (AVX2, FMA), then host_arch() (the baseline every image set has).
std::vector<std::string_view> host_image_archs();

// The index of the CPU image to load: the first of host_image_archs() that `fatbin` has, or
// only QUIVER_CPU_ARCH when set (an InvalidArgument Error when this CPU cannot run that arch);
// -1 when none, `archs_tried` then naming them ("x86_64_v3 or x86_64").
int find_cpu_image(const format::FatBinary& fatbin, std::string& archs_tried);

// The subgroup width for kernels of a CPU image of `arch`: its vector width in 32-bit lanes
// (x86_64 and aarch64 4, x86_64_v3 8, x86_64_v4 16), or QUIVER_CPU_SUBGROUP_SIZE when set (a
// power of two from 1 to 128; an InvalidArgument Error naming the variable otherwise). A kernel
// runs with the largest power of two not above it that divides its block's thread count.
uint32_t cpu_subgroup_width(std::string_view arch);

// How many CPU devices this process exposes: QUIVER_CPU_DEVICES (1..64), default 1. Each is an
// independent Device with its own worker pool. 0 with `why_not` set when the variable is invalid.
size_t cpu_device_count(std::string& why_not);

class CpuBuffer final : public Buffer {
 public:
  explicit CpuBuffer(size_t size);   // 64-byte aligned, at least 64 bytes
  CpuBuffer(void* foreign, size_t size);   // wraps host memory it does not own (DLPack import)
  ~CpuBuffer() override;
  void* data() const { return data_; }
  uint64_t native_handle() const override { return reinterpret_cast<uintptr_t>(data_); }

 private:
  void* data_ = nullptr;
  bool owned_ = true;
};

// 64-byte aligned storage that only grows (shared memory of one worker's block).
class AlignedScratch {
 public:
  AlignedScratch() = default;
  AlignedScratch(const AlignedScratch&) = delete;
  AlignedScratch& operator=(const AlignedScratch&) = delete;
  ~AlignedScratch();
  void* reserve(size_t bytes);

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

struct WorkerScratch;

// One thread of a barrier kernel's block, run as a fiber. ctx.runtime points back here so
// barrier() can find the fiber that called it.
struct FiberSlot {
  qv_cpu_ctx ctx;
  void* sp = nullptr;             // saved stack pointer while switched out
  bool done = false;              // the kernel call returned
  WorkerScratch* worker = nullptr;
  void* tsan_fiber = nullptr;     // ThreadSanitizer's handle for this fiber (tsan_fibers.h); else null
};

// What one worker reuses from launch to launch: its block's shared memory and, for barrier
// kernels, one fiber (context + stack) per thread of the block.
struct WorkerScratch {
  WorkerScratch() = default;
  WorkerScratch(const WorkerScratch&) = delete;
  WorkerScratch& operator=(const WorkerScratch&) = delete;
  ~WorkerScratch();
  AlignedScratch shared;
  FiberStacks stacks;
  std::vector<FiberSlot> fibers;
  void* scheduler_sp = nullptr;   // the worker's own context while a fiber runs
  void* tsan_scheduler = nullptr; // ThreadSanitizer's handle for the worker's own context
  qv_cpu_kernel_fn fn = nullptr;  // the kernel the fibers are running
  void* const* args = nullptr;
  bool stray_barrier = false;     // a barrier-free kernel called barrier()
};

// The process's CPU workers, one set for every CpuDevice alive, so that several Devices do not
// oversubscribe the machine; their launches still run at the same time (ThreadPool). Created
// with the first CpuDevice, its threads at the first launch; released with the last device.
struct WorkerPool {
  explicit WorkerPool(unsigned count) : workers(count) {}
  const unsigned workers;
  std::mutex start;                                     // guards the lazy start below
  std::vector<std::unique_ptr<WorkerScratch>> scratch;  // one per worker thread
  std::unique_ptr<ThreadPool> pool;   // declared last: its threads stop before scratch goes
};

class CpuDevice final : public Device {
 public:
  // One of QUIVER_CPU_DEVICES. Workers: the process's WorkerPool, of QUIVER_CPU_THREADS (1 to
  // 1024) threads, else usable_cpus(), read when the first device alive is opened.
  CpuDevice();
  ~CpuDevice() override;
  std::string backend_name() const override { return "cpu"; }
  std::string device_name() const override { return name_; }
  std::unique_ptr<Buffer> alloc(size_t bytes) override;
  void upload(Buffer& dst, const void* src, size_t bytes) override;
  void download(const Buffer& src, void* dst, size_t bytes) override;
  std::unique_ptr<Module> load(const format::FatBinary& fatbin) override;
  std::vector<size_t> images_to_load(const format::FatBinary& fatbin) const override;
  // Launches run to completion before launch() returns, so there is nothing left to wait for.
  void synchronize() override {}
  // start_timer: the backend interface default (host clock; launches are synchronous here).
  // Host memory needs no queue or driver object.
  void* native_stream() const override { return nullptr; }
  void* native_device() const override { return nullptr; }
  std::unique_ptr<Buffer> import_memory(uint64_t address, size_t bytes) override;

  // Runs `job(worker, scratch)` on every worker; the pool starts on first use so that merely
  // probing backends (Device::available_backends) creates no threads.
  void run_on_workers(const std::function<void(unsigned, WorkerScratch&)>& job);
  unsigned worker_count() const { return workers_->workers; }

 private:
  std::string name_;
  std::mutex launch_mutex_;   // this device's launches take turns, as on a GPU queue
  std::shared_ptr<WorkerPool> workers_;
};

std::unique_ptr<Module> load_cpu_module(CpuDevice& device, const format::FatBinary& fatbin);

}  // namespace quiver::backend::cpu
