// The CPU backend's worker threads: created once per device, woken for each launch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
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

// Worker threads shared by every caller: a call's tasks queue behind earlier calls' and run on
// whichever workers come free, so calls from several threads (several CPU devices) run at the
// same time on one set of threads instead of each bringing its own.
class ThreadPool {
 public:
  explicit ThreadPool(unsigned workers);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  unsigned size() const { return static_cast<unsigned>(threads_.size()); }
  // Runs size() tasks, each job(w) on some worker w (the index of the thread running it, so a
  // task may use that worker's own scratch), and returns when all have returned. The first
  // exception a task throws is rethrown here, after every task has finished.
  void run_on_all(const std::function<void(unsigned)>& job);

 private:
  struct Call {
    const std::function<void(unsigned)>* job;
    unsigned unclaimed;   // tasks no worker has taken yet
    unsigned unfinished;  // tasks not yet returned
    std::exception_ptr error;
  };
  void worker_main(unsigned index);

  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  std::deque<Call*> calls_;   // calls with unclaimed tasks, oldest first
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace quiver::backend::cpu
