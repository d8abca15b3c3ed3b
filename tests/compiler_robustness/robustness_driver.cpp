// Compiler robustness: runs quiverc on every given source (the diagnostics corpus, the kernel
// sources) and on deterministic mutants of the kernel sources, N processes at a time. quiverc
// must exit 0 (compiled) or 1 with an `error:` line (diagnosed); a signal, a hang past the
// timeout, any other status, or status 1 without a diagnostic is a failure, reported with the
// reproducer's path and the edits that made it.
//
// usage: quiverc_robustness --compiler PATH --work DIR [--jobs N] [--timeout S] [--mutants N]
//                           [--seed S] [--sources A.cpp ...] [--mutate K.cpp ...]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mutator.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string compiler, work;
  int jobs = 2;
  int timeout_s = 60;
  int mutants = 300;
  uint64_t seed = 20240801;
  std::vector<std::string> sources, mutate;
};

struct Job {
  std::string source;    // the file quiverc compiles
  std::string what;      // "diagnostics corpus", or the original and the edits of a mutant
  pid_t pid = -1;
  Clock::time_point started;
  bool timed_out = false;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Starts quiverc in its own process group (so a timeout also ends anything it started), with
// stdout+stderr to <source>.log and the fat binary to <source>.qfb.
pid_t start(const Options& o, const std::string& source) {
  const std::string log = source + ".log", out = source + ".qfb";
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(125);
    dup2(fd, 1);
    dup2(fd, 2);
    int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, 0);
    execl(o.compiler.c_str(), o.compiler.c_str(), source.c_str(), "-o", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Returns "" when the outcome is acceptable, else what went wrong.
std::string judge(const Job& job, int status) {
  const std::string log = read_file(job.source + ".log");
  fs::remove(job.source + ".qfb");
  if (job.timed_out) return "hung: killed after the timeout";
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  int rc = WEXITSTATUS(status);
  if (rc == 0) return "";
  if (rc != 1) return "exit status " + std::to_string(rc) + " (expected 0 or 1)";
  if (log.find("error: ") == std::string::npos) return "exit status 1 without an `error:` diagnostic";
  return "";
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string>* list = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      list = nullptr;
      return argv[++i];
    };
    if (a == "--compiler") o.compiler = value();
    else if (a == "--work") o.work = value();
    else if (a == "--jobs") o.jobs = std::stoi(value());
    else if (a == "--timeout") o.timeout_s = std::stoi(value());
    else if (a == "--mutants") o.mutants = std::stoi(value());
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--sources") list = &o.sources;
    else if (a == "--mutate") list = &o.mutate;
    else if (list && !a.starts_with("--")) list->push_back(a);
    else throw std::runtime_error("unknown argument " + a);
  }
  if (o.compiler.empty() || o.work.empty()) throw std::runtime_error("--compiler and --work are required");
  if (o.jobs < 1 || o.timeout_s < 1 || o.mutants < 0) throw std::runtime_error("bad --jobs/--timeout/--mutants");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<Job> todo;
  try {
    o = parse(argc, argv);
    fs::remove_all(o.work);
    fs::create_directories(o.work + "/sources");
    fs::create_directories(o.work + "/mutants");
    // Sources are copied so that every output lands in the work directory.
    for (const std::string& s : o.sources) {
      std::string copy = o.work + "/sources/" + fs::path(s).filename().string();
      fs::copy_file(s, copy, fs::copy_options::overwrite_existing);
      todo.push_back({copy, "unmodified " + s});
    }
    // Only files with kernels are worth mutating (host test drivers are skipped).
    std::vector<std::pair<std::string, std::string>> originals;
    for (const std::string& s : o.mutate) {
      std::string text = read_file(s);
      if (text.find("QV_KERNEL") != std::string::npos) originals.emplace_back(s, std::move(text));
    }
    if (o.mutants > 0 && originals.empty()) throw std::runtime_error("no kernel sources to mutate");
    for (int i = 0; i < o.mutants; ++i) {
      const auto& [path, text] = originals[static_cast<size_t>(i) % originals.size()];
      robustness::Mutant m = robustness::mutate(text, o.seed + static_cast<uint64_t>(i));
      std::string name = o.work + "/mutants/m" + std::to_string(i) + "_" + fs::path(path).filename().string();
      write_file(name, m.text);
      std::string what = "mutant of " + path + " (seed " + std::to_string(o.seed + static_cast<uint64_t>(i)) + "):";
      for (const std::string& e : m.edits) what += " [" + e + "]";
      todo.push_back({name, what});
    }
  } catch (const std::exception& e) {
    std::cerr << "quiverc_robustness: " << e.what() << "\n";
    return 2;
  }

  const auto t0 = Clock::now();
  std::vector<Job> running;
  size_t next = 0, failures = 0, compiled = 0, diagnosed = 0;
  while (next < todo.size() || !running.empty()) {
    while (next < todo.size() && running.size() < static_cast<size_t>(o.jobs)) {
      Job job = todo[next++];
      job.pid = start(o, job.source);
      job.started = Clock::now();
      running.push_back(job);
    }
    bool reaped = false;
    for (size_t r = 0; r < running.size(); ++r) {
      Job& job = running[r];
      int status = 0;
      pid_t got = waitpid(job.pid, &status, WNOHANG);
      if (got == 0) {
        if (!job.timed_out && Clock::now() - job.started > std::chrono::seconds(o.timeout_s)) {
          job.timed_out = true;
          kill(-job.pid, SIGKILL);
        }
        continue;
      }
      kill(-job.pid, SIGKILL);  // anything quiverc left behind in its group
      std::string verdict = judge(job, status);
      if (!verdict.empty()) {
        ++failures;
        std::string log = read_file(job.source + ".log");
        if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
        std::cout << "FAIL: " << job.source << ": " << verdict << "\n  " << job.what << "\n  quiverc output:\n"
                  << log << "\n";
      } else {
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        (ok ? compiled : diagnosed) += 1;
        fs::remove(job.source + ".log");
        if (job.source.find("/mutants/") != std::string::npos) fs::remove(job.source);
      }
      running.erase(running.begin() + static_cast<ptrdiff_t>(r));
      reaped = true;
      break;
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("quiverc_robustness: %zu runs (%zu sources, %d mutants) in %.1f s on %d jobs: %zu compiled, "
              "%zu diagnosed, %zu failed\n",
              todo.size(), o.sources.size(), o.mutants, secs, o.jobs, compiled, diagnosed, failures);
  return failures == 0 ? 0 : 1;
}
