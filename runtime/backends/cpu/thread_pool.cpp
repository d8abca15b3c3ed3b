#include "backends/cpu/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace quiver::backend::cpu {

namespace {

// ceil(quota / period) from "QUOTA PERIOD" (v2 cpu.max; "max PERIOD" is no limit) or from the two
// v1 files' numbers (-1: no limit); 0 when there is no limit or the text is not one.
unsigned quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<unsigned>(std::min<long long>((quota + period - 1) / period, 1 << 20));
}

unsigned cgroup_v2_limit(const std::string& path) {
  // The quota may be set on any ancestor: the smallest along the path counts.
  unsigned limit = 0;
  std::string dir = path;
  for (;;) {
    std::ifstream in("/sys/fs/cgroup" + dir + "/cpu.max");
    std::string quota;
    long long period = 0;
    if (in >> quota >> period && quota != "max") {
      char* end = nullptr;
      long long q = std::strtoll(quota.c_str(), &end, 10);
      unsigned n = end != quota.c_str() && *end == '\0' ? quota_cpus(q, period) : 0;
      if (n != 0) limit = limit == 0 ? n : std::min(limit, n);
    }
    if (dir.empty() || dir == "/") break;
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return limit;
}

unsigned cgroup_v1_limit(const std::string& path) {
  for (const char* root : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
    std::ifstream q(std::string(root) + path + "/cpu.cfs_quota_us"), p(std::string(root) + path + "/cpu.cfs_period_us");
    long long quota = 0, period = 0;
    if (q >> quota && p >> period) return quota_cpus(quota, period);
  }
  return 0;
}

// The CPU quota of this process's cgroup, 0 when there is none (or no cgroup file system).
unsigned cgroup_cpu_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  unsigned limit = 0;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    unsigned n = 0;
    if (controllers.empty()) n = cgroup_v2_limit(path);
    else if (("," + controllers + ",").find(",cpu,") != std::string::npos) n = cgroup_v1_limit(path);
    if (n != 0) limit = limit == 0 ? n : std::min(limit, n);
  }
  return limit;
}

}  // namespace

unsigned usable_cpus() {
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  if (unsigned quota = cgroup_cpu_limit(); quota != 0) cpus = std::min(cpus, quota);
  return cpus;
}

ThreadPool::ThreadPool(unsigned workers) {
  if (workers == 0) workers = 1;
  threads_.reserve(workers);
  try {
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this, i] { worker_main(i); });
  } catch (...) {
    // Could not start them all: stop the ones that did start before reporting.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    start_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::run_on_all(const std::function<void(unsigned)>& job) {
  Call call{&job, size(), size(), nullptr};
  std::unique_lock lock(mutex_);
  calls_.push_back(&call);
  start_cv_.notify_all();
  done_cv_.wait(lock, [&] { return call.unfinished == 0; });
  if (call.error) std::rethrow_exception(call.error);
}

void ThreadPool::worker_main(unsigned index) {
  std::unique_lock lock(mutex_);
  for (;;) {
    start_cv_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
    if (stopping_) return;
    Call* call = calls_.front();
    if (--call->unclaimed == 0) calls_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      (*call->job)(index);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !call->error) call->error = error;
    if (--call->unfinished == 0) done_cv_.notify_all();
  }
}

}  // namespace quiver::backend::cpu
