// run_jobs (compiler/driver/parallel_jobs.h) with stand-in jobs: results come back in job order
// with every byte of their images, whatever the worker count; stderr reads as a serial run's;
// the first failure in job order wins and ends the run there; a worker that dies mid-job is
// reported with its wait status, and end_like ends a process the same way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "driver/parallel_jobs.h"

namespace quiver::compiler {
namespace {

// Job i's images, from a seed drawn per test: sizes from 1 byte to past a pipe's buffer.
std::vector<TargetImage> images_of(size_t i, uint64_t seed) {
  std::mt19937_64 rng(seed + i);
  std::vector<TargetImage> images(1 + rng() % 3);
  for (size_t k = 0; k < images.size(); ++k) {
    TargetImage& img = images[k];
    img.target = static_cast<format::Target>(rng() % 4);
    img.arch = "arch" + std::to_string(rng() % 100);
    size_t size = (k == 0 && i % 2 == 0) ? (1 << 20) + rng() % 4096 : 1 + rng() % 300;
    img.data.resize(size);
    for (std::byte& b : img.data) b = static_cast<std::byte>(rng());
    for (size_t n = rng() % 4; n > 0; --n) img.kernels.push_back("kernel_" + std::to_string(rng() % 1000));
    for (size_t n = rng() % 3; n > 0; --n) img.requirements.push_back("feature:f" + std::to_string(rng() % 1000));
    img.programmatic_launch = rng() % 2 == 1;
  }
  return images;
}

void expect_same(const std::vector<TargetImage>& got, const std::vector<TargetImage>& want, size_t job) {
  ASSERT_EQ(got.size(), want.size()) << "job " << job;
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].target, want[k].target) << "job " << job << " image " << k;
    EXPECT_EQ(got[k].arch, want[k].arch) << "job " << job << " image " << k;
    EXPECT_TRUE(got[k].data == want[k].data) << "job " << job << " image " << k;
    EXPECT_EQ(got[k].kernels, want[k].kernels) << "job " << job << " image " << k;
    EXPECT_EQ(got[k].requirements, want[k].requirements) << "job " << job << " image " << k;
    EXPECT_EQ(got[k].programmatic_launch, want[k].programmatic_launch) << "job " << job << " image " << k;
  }
}

// Job i sleeps a little (later jobs less, so that they finish first) and writes two lines.
BuildJobResult slow_job(size_t i, size_t count, uint64_t seed) {
  std::fprintf(stderr, "job %zu begins\n", i);
  usleep(static_cast<useconds_t>((count - i) * 20000));
  std::fprintf(stderr, "job %zu ends\n", i);
  return {images_of(i, seed), std::nullopt};
}

std::string serial_log(size_t count) {
  std::string log;
  for (size_t i = 0; i < count; ++i)
    log += "job " + std::to_string(i) + " begins\njob " + std::to_string(i) + " ends\n";
  return log;
}

TEST(ParallelJobs, ResultsAndStderrInJobOrderForEveryWorkerCount) {
  const uint64_t seed = std::random_device{}();
  const size_t count = 7;
  for (unsigned workers : {1u, 2u, 3u, 8u}) {
    testing::internal::CaptureStderr();
    std::vector<JobRun> runs = run_jobs(count, workers, [&](size_t i) { return slow_job(i, count, seed); });
    std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(log, serial_log(count)) << workers << " workers";
    ASSERT_EQ(runs.size(), count) << workers << " workers";
    for (size_t i = 0; i < count; ++i) {
      EXPECT_FALSE(runs[i].died());
      EXPECT_FALSE(runs[i].result.error);
      expect_same(runs[i].result.images, images_of(i, seed), i);
    }
  }
}

// A job whose one image's arch says where it ran: "here" (process `self`) or "worker".
std::function<BuildJobResult(size_t)> say_where(pid_t self) {
  return [self](size_t) {
    BuildJobResult r;
    r.images.push_back({format::Target::CPU, getpid() == self ? "here" : "worker", {std::byte{1}}, {}});
    return r;
  };
}

// Sanitizer runtimes (TSan) start threads of their own: run_jobs then runs the jobs here.
#define SKIP_UNLESS_FORKING()                                                                   \
  if (!single_threaded()) GTEST_SKIP() << "this process has threads: run_jobs runs jobs in it"

TEST(ParallelJobs, RunsInWorkerProcesses) {
  SKIP_UNLESS_FORKING();
  const pid_t self = getpid();
  std::vector<JobRun> runs = run_jobs(4, 2, say_where(self));
  ASSERT_EQ(runs.size(), 4u);
  for (const JobRun& run : runs) EXPECT_EQ(run.result.images.at(0).arch, "worker");
}

TEST(ParallelJobs, FirstFailureInJobOrderEndsTheRun) {
  const uint64_t seed = std::random_device{}();
  // Job 4 fails at once, job 2 late: the serial build stops at job 2, so must the parallel one,
  // and the stderr of job 4 (which a serial build never reaches) must not appear.
  auto job = [&](size_t i) {
    BuildJobResult r;
    std::fprintf(stderr, "job %zu\n", i);
    if (i == 2) usleep(200000);
    if (i == 2 || i == 4) r.error = "job " + std::to_string(i) + " failed";
    else r.images = images_of(i, seed);
    return r;
  };
  for (unsigned workers : {1u, 4u}) {
    testing::internal::CaptureStderr();
    std::vector<JobRun> runs = run_jobs(6, workers, job);
    std::string log = testing::internal::GetCapturedStderr();
    ASSERT_EQ(runs.size(), 3u) << workers << " workers";
    EXPECT_EQ(log, "job 0\njob 1\njob 2\n") << workers << " workers";
    expect_same(runs[0].result.images, images_of(0, seed), 0);
    expect_same(runs[1].result.images, images_of(1, seed), 1);
    EXPECT_EQ(runs[2].result.error.value_or(""), "job 2 failed");
  }
}

TEST(ParallelJobs, WorkerDyingMidJobIsReportedWithItsStatus) {
  SKIP_UNLESS_FORKING();
  testing::internal::CaptureStderr();
  std::vector<JobRun> runs = run_jobs(5, 2, [](size_t i) {
    std::fprintf(stderr, "job %zu\n", i);
    if (i == 1) {   // SIGTERM: a signal no sanitizer turns into a report and an exit code
      std::fprintf(stderr, "crash report\n");
      raise(SIGTERM);
    }
    if (i == 3) _exit(7);
    return BuildJobResult{};
  });
  std::string log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].died());
  ASSERT_TRUE(runs[1].died());
  EXPECT_TRUE(WIFSIGNALED(runs[1].died_status));
  EXPECT_EQ(WTERMSIG(runs[1].died_status), SIGTERM);
  EXPECT_EQ(log, "job 0\njob 1\ncrash report\n");
}

TEST(ParallelJobs, EndLikeEndsTheSameWay) {
  EXPECT_EXIT(end_like(SIGSEGV), testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(end_like(7 << 8), testing::ExitedWithCode(7), "");
}

TEST(ParallelJobs, ThreadsMeanNoFork) {
  EXPECT_GE(available_cpus(), 1u);
  std::promise<void> release;
  std::thread other([&] { release.get_future().wait(); });
  EXPECT_FALSE(single_threaded());
  const pid_t self = getpid();
  std::vector<JobRun> runs = run_jobs(2, 2, say_where(self));
  release.set_value();
  other.join();
  ASSERT_EQ(runs.size(), 2u);
  for (const JobRun& run : runs) EXPECT_EQ(run.result.images.at(0).arch, "here");
}

}  // namespace
}  // namespace quiver::compiler
