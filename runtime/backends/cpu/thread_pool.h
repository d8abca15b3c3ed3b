// The CPU backend's worker threads: created once per device, woken for each launch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace quiver::backend::cpu {

// CPUs this process may use: the calling thread's affinity mask, further bounded by a cgroup CPU
// quota (v2 `cpu.max` on the process's cgroup and its ancestors, v1 `cpu.cfs_quota_us`), rounded
// up; at least 1.
unsigned usable_cpus();

class ThreadPool {
 public:
  explicit ThreadPool(unsigned workers);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  unsigned size() const { return static_cast<unsigned>(threads_.size()); }
  // Calls job(worker_index) once on every worker and returns when all calls have returned.
  // The first exception a call throws is rethrown here, after every worker has finished.
  // One caller at a time (the device serialises launches).
  void run_on_all(const std::function<void(unsigned)>& job);

 private:
  void worker_main(unsigned index);

  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(unsigned)>* job_ = nullptr;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace quiver::backend::cpu
