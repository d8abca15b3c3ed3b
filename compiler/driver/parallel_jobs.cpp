#include "driver/parallel_jobs.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "llvm/Support/raw_ostream.h"
#include "targets/llvm_common/process.h"

namespace quiver::compiler {

namespace {

// ---- the messages a worker sends: job index, end of its stderr so far, the job's result ----

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_bytes(std::string& out, const void* data, size_t size) {
  put_u64(out, size);
  out.append(static_cast<const char*>(data), size);
}
void put_string(std::string& out, const std::string& s) { put_bytes(out, s.data(), s.size()); }

// Reads what put_* wrote; `complete` turns false when the buffer ends first.
struct Reader {
  const std::string& in;
  size_t at = 0;
  bool complete = true;
  bool take(void* out, size_t size) {
    if (!complete || in.size() - at < size) return complete = false;
    std::memcpy(out, in.data() + at, size);
    at += size;
    return true;
  }
  uint32_t u32() {
    uint32_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string string() {
    uint64_t size = u64();
    if (!complete || in.size() - at < size) {
      complete = false;
      return {};
    }
    std::string s = in.substr(at, size);
    at += size;
    return s;
  }
};

std::string encode(uint32_t job, uint64_t log_end, const BuildJobResult& r) {
  std::string body;
  put_u32(body, r.error ? 0 : 1);
  if (r.error) {
    put_string(body, *r.error);
  } else {
    put_u32(body, static_cast<uint32_t>(r.images.size()));
    for (const TargetImage& img : r.images) {
      put_u32(body, static_cast<uint32_t>(img.target));
      put_string(body, img.arch);
      put_bytes(body, img.data.data(), img.data.size());
      put_bytes(body, img.frame.data(), img.frame.size());
      put_u32(body, static_cast<uint32_t>(img.kernels.size()));
      for (const std::string& k : img.kernels) put_string(body, k);
      put_u32(body, static_cast<uint32_t>(img.requirements.size()));
      for (const std::string& q : img.requirements) put_string(body, q);
      put_u32(body, img.programmatic_launch ? 1 : 0);
    }
  }
  std::string msg;
  put_u32(msg, job);
  put_u64(msg, log_end);
  put_string(msg, body);
  return msg;
}

// One complete message from the front of `in` (removed from it), or nothing yet.
std::optional<std::pair<uint32_t, uint64_t>> decode(std::string& in, BuildJobResult& r) {
  Reader msg{in};
  uint32_t job = msg.u32();
  uint64_t log_end = msg.u64();
  std::string body = msg.string();
  if (!msg.complete) return std::nullopt;
  in.erase(0, msg.at);
  Reader b{body};
  if (b.u32() == 0) {
    r.error = b.string();
  } else {
    uint32_t n = b.u32();
    for (uint32_t i = 0; i < n && b.complete; ++i) {
      TargetImage img;
      img.target = static_cast<format::Target>(b.u32());
      img.arch = b.string();
      std::string data = b.string();
      const auto* bytes = reinterpret_cast<const std::byte*>(data.data());
      img.data.assign(bytes, bytes + data.size());
      std::string frame = b.string();
      const auto* frame_bytes = reinterpret_cast<const std::byte*>(frame.data());
      img.frame.assign(frame_bytes, frame_bytes + frame.size());
      uint32_t kernels = b.u32();
      for (uint32_t k = 0; k < kernels && b.complete; ++k) img.kernels.push_back(b.string());
      uint32_t requirements = b.u32();
      for (uint32_t q = 0; q < requirements && b.complete; ++q) img.requirements.push_back(b.string());
      img.programmatic_launch = b.u32() != 0;
      r.images.push_back(std::move(img));
    }
  }
  if (!b.complete) throw std::runtime_error("a worker's message is cut short");
  return std::pair{job, log_end};
}

// ---- file descriptors ----

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("cannot write to a pipe: ") + std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads up to `size` bytes, retrying after signals; 0 at the end, -1 on an error.
ssize_t read_some(int fd, void* data, size_t size) {
  for (;;) {
    ssize_t n = read(fd, data, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

std::string read_range(int fd, uint64_t begin, uint64_t end) {
  std::string out(end > begin ? end - begin : 0, '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(begin + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

void flush_all_output() {
  std::cout.flush();
  std::cerr.flush();
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
}

// ---- workers ----

struct Worker {
  pid_t pid = -1;
  int task_fd = -1;     // this process writes job indices; closed when no job is left
  int result_fd = -1;   // the worker's messages
  int log_fd = -1;      // the worker's stderr (an unlinked file this process reads back)
  std::string inbox;
  std::optional<size_t> job;   // the job it runs now
  uint64_t log_begin = 0;      // where that job's stderr starts in the log
  bool cancelled = false;      // killed by this process: its job's result is not needed
};

[[noreturn]] void worker_main(int task_fd, int result_fd, const std::function<BuildJobResult(size_t)>& job) {
  uint32_t index = 0;
  while (read_some(task_fd, &index, sizeof index) == static_cast<ssize_t>(sizeof index)) {
    BuildJobResult r;
    try {
      r = job(index);
    } catch (const std::exception& e) {
      r.error = std::string("internal error: ") + e.what();
    } catch (...) {
      r.error = "internal error: an unknown exception";
    }
    flush_all_output();
    off_t log_end = lseek(STDERR_FILENO, 0, SEEK_CUR);
    std::string msg = encode(index, static_cast<uint64_t>(log_end < 0 ? 0 : log_end), r);
    try {
      write_all(result_fd, msg.data(), msg.size());
    } catch (const std::exception&) {
      _exit(1);   // this process's parent is gone
    }
  }
  _exit(0);
}

int make_log_file(const std::filesystem::path& dir) {
  std::string pattern = (dir / "stderr-XXXXXX").string();
  int fd = mkstemp(pattern.data());
  if (fd < 0) throw std::runtime_error("cannot create '" + pattern + "': " + std::strerror(errno));
  unlink(pattern.c_str());
  return fd;
}

class WorkerPool {
 public:
  // A worker that is gone makes a write to its task pipe fail (EPIPE) instead of killing this
  // process with SIGPIPE; the workers and the tools they run get the disposition back.
  WorkerPool(unsigned count, const std::function<BuildJobResult(size_t)>& job)
      : old_sigpipe_(signal(SIGPIPE, SIG_IGN)) {
    flush_all_output();
    for (unsigned w = 0; w < count; ++w) start(job);
  }
  ~WorkerPool() {
    signal(SIGPIPE, old_sigpipe_);
    for (Worker& w : workers_) {
      if (w.job) kill(w.pid, SIGKILL);
      close_fd(w.task_fd);
    }
    for (Worker& w : workers_) {
      if (w.pid > 0)
        while (waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      close_fd(w.result_fd);
      close_fd(w.log_fd);
    }
  }
  std::vector<Worker>& workers() { return workers_; }

  static void close_fd(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  }

 private:
  void start(const std::function<BuildJobResult(size_t)>& job) {
    int task[2], result[2];
    if (pipe2(task, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    if (pipe2(result, O_CLOEXEC) != 0) {
      close(task[0]);
      close(task[1]);
      throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    Worker w;
    w.log_fd = make_log_file(scratch_.path());
    w.task_fd = task[1];
    w.result_fd = result[0];
    pid_t pid = fork();
    if (pid < 0) {
      for (int fd : {task[0], task[1], result[0], result[1], w.log_fd}) close(fd);
      throw std::runtime_error(std::string("cannot start a worker process: ") + std::strerror(errno));
    }
    if (pid == 0) {
      // The other workers' pipes stay with this process's parent; scratch files (ptxas,
      // ld.lld inputs) go under the pool's directory, removed with it whatever happens.
      for (Worker& other : workers_)
        for (int fd : {other.task_fd, other.result_fd, other.log_fd}) close(fd);
      close(task[1]);
      close(result[0]);
      if (dup2(w.log_fd, STDERR_FILENO) < 0) _exit(1);
      close(w.log_fd);
      setenv("TMPDIR", scratch_.path().c_str(), 1);
      signal(SIGPIPE, old_sigpipe_);
      worker_main(task[0], result[1], job);
    }
    close(task[0]);
    close(result[1]);
    w.pid = pid;
    workers_.push_back(std::move(w));
  }

  sighandler_t old_sigpipe_;
  llvm_common::ScratchDir scratch_;   // destroyed after the workers are waited for
  std::vector<Worker> workers_;
};

void copy_to_stderr(const std::string& text) {
  if (text.empty()) return;
  flush_all_output();
  try {
    write_all(STDERR_FILENO, text.data(), text.size());
  } catch (const std::exception&) {
    // stderr is gone: nothing left to tell
  }
}

std::vector<JobRun> run_serially(size_t count, const std::function<BuildJobResult(size_t)>& job) {
  std::vector<JobRun> runs;
  for (size_t i = 0; i < count; ++i) {
    runs.push_back({job(i), 0});
    if (runs.back().result.error) break;
  }
  return runs;
}

}  // namespace

std::vector<JobRun> run_jobs(size_t count, unsigned workers, const std::function<BuildJobResult(size_t)>& job) {
  if (workers > count) workers = static_cast<unsigned>(count);
  if (workers <= 1 || !single_threaded()) return run_serially(count, job);

  WorkerPool pool(workers, job);
  std::vector<std::optional<JobRun>> done(count);
  std::vector<uint64_t> log_begin(count, 0);
  std::vector<std::string> logs(count);
  size_t next = 0;          // the next job to hand out
  size_t needed = count;    // jobs before this one are needed; a failure at i makes it i + 1
  auto dispatch = [&](Worker& w) {
    w.job.reset();
    if (next >= needed) {
      WorkerPool::close_fd(w.task_fd);
      return;
    }
    uint32_t index = static_cast<uint32_t>(next);
    try {
      write_all(w.task_fd, reinterpret_cast<const char*>(&index), sizeof index);
    } catch (const std::runtime_error&) {
      WorkerPool::close_fd(w.task_fd);   // gone between jobs: its end of file comes through poll
      return;
    }
    ++next;
    w.job = index;
  };
  auto finished = [&](Worker& w, size_t index, JobRun run, uint64_t log_end) {
    logs[index] = read_range(w.log_fd, w.log_begin, log_end);
    w.log_begin = log_end;
    if (run.result.error || run.died()) {
      needed = std::min(needed, index + 1);
      for (Worker& other : pool.workers())
        if (other.job && *other.job >= needed && !other.cancelled) {
          kill(other.pid, SIGKILL);
          other.cancelled = true;
        }
    }
    done[index] = std::move(run);
  };
  for (Worker& w : pool.workers()) dispatch(w);

  std::vector<JobRun> runs;
  while (runs.size() < needed) {
    if (size_t i = runs.size(); done[i]) {
      copy_to_stderr(logs[i]);
      runs.push_back(std::move(*done[i]));
      continue;
    }
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    for (Worker& w : pool.workers())
      if (w.result_fd >= 0) {
        fds.push_back({w.result_fd, POLLIN, 0});
        polled.push_back(&w);
      }
    if (fds.empty()) throw std::runtime_error("internal error: the workers ended before job " + std::to_string(runs.size()));
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
    }
    for (size_t p = 0; p < fds.size(); ++p) {
      if (fds[p].revents == 0) continue;
      Worker& w = *polled[p];
      char buf[1 << 16];
      ssize_t n = read_some(w.result_fd, buf, sizeof buf);
      if (n < 0) throw std::runtime_error(std::string("cannot read from a worker: ") + std::strerror(errno));
      if (n > 0) {
        w.inbox.append(buf, static_cast<size_t>(n));
        BuildJobResult r;
        while (auto header = decode(w.inbox, r)) {
          if (!w.job || header->first != *w.job) throw std::runtime_error("internal error: a worker answered out of turn");
          finished(w, header->first, {std::move(r), 0}, header->second);
          r = {};
          dispatch(w);
        }
        continue;
      }
      // The worker is gone: after its last job (task pipe closed), killed, or dead mid-job.
      int status = 0;
      while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      w.pid = -1;
      WorkerPool::close_fd(w.result_fd);
      WorkerPool::close_fd(w.task_fd);
      if (w.job && !w.cancelled) {
        struct stat st{};
        fstat(w.log_fd, &st);
        JobRun run;
        if (status != 0) run.died_status = status;
        else run.result.error = "internal error: a worker ended without the result of its job";
        finished(w, *w.job, std::move(run), static_cast<uint64_t>(st.st_size));
      }
      w.job.reset();
    }
  }
  return runs;
}

unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

bool single_threaded() {
  std::error_code ec;
  size_t threads = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++threads;
  return !ec && threads == 1;
}

[[noreturn]] void end_like(int wait_status) {
  flush_all_output();
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    _exit(128 + sig);
  }
  std::exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1);
}

}  // namespace quiver::compiler
