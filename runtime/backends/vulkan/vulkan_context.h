// One opened Vulkan device: physical device, logical device, compute queue, memory helpers, the
// staging path for uploads/downloads and the pool of per-launch resources. Buffers and modules
// hold a shared_ptr to it, so it outlives all of them. The VkInstance is not its own: one
// instance per process serves every Context (vulkan_context.cpp, "The process-wide instance").
//
// Launch model: each launch records its own command buffer and is submitted at once with its
// own fence (asynchronous). The command buffer, descriptor pool, args buffer and fence form a
// LaunchSlot that stays untouched until its fence signals, then is recycled. Every launch starts
// with a memory barrier against all earlier work on the queue, so kernels see each other's
// writes in submission order. upload, download, synchronize and resource destruction drain.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "memory_choice.h"
#include "vulkan_api.h"
#include "vulkan_validation.h"

namespace quiver::backend::vulkan {

// A VkBuffer with its own memory (persistently mapped when host-visible).
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize size = 0;
};

struct LaunchSlot {
  VkFence fence = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  uint32_t pool_capacity = 0;   // storage-buffer descriptors the pool holds
  Allocation args;              // scalar arguments, host-visible
  std::string kernel;           // named when the submission fails asynchronously
  const struct TimerSlot* starts_timer = nullptr;   // the armed timer whose start its commands write
};

// One Device::elapsed_ms measurement: a query pair, and command buffers recorded once that write
// the start (when no launch did) and the end timestamp, the end one signalling `fence`.
struct TimerSlot {
  VkQueryPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};   // start, end
  VkFence fence = VK_NULL_HANDLE;
  bool ended = false;   // the end was submitted: wait for `fence` before reuse
};

class Context {
 public:
  // Usable devices (Vulkan 1.2+, a compute queue), best type first: discrete > integrated >
  // virtual > CPU. 0 with `why_not` set when the loader, a driver or a usable device is missing.
  static size_t count(std::string& why_not);
  // Opens the index-th usable device, with its own VkDevice and queue on the process's
  // VkInstance. nullptr with `why_not` set when it cannot; `device_count` is the number of usable
  // devices found.
  static std::shared_ptr<Context> open(size_t index, size_t& device_count, std::string& why_not);
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  Api vk;
  VkInstance instance = VK_NULL_HANDLE;   // the process's, shared; never destroyed by a Context
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory_properties{};
  // Storage buffers live in host-visible device memory (lavapipe, integrated GPUs): upload and
  // download are memcpy after draining, no staging copies.
  bool unified_memory = false;
  // QUIVER_VULKAN_PIPELINE_STATS=1 and VK_KHR_pipeline_executable_properties: each pipeline's
  // driver statistics are printed to stderr when it is created.
  bool pipeline_statistics = false;
  // What this device offers that an image may require (image_choice.h): features, extensions,
  // cooperative-matrix configurations, in the manifest's "requires" vocabulary.
  std::set<std::string> offers;
  // VK_EXT_pipeline_creation_feedback (core in 1.3): the driver says whether a pipeline came
  // from the pipeline cache (counted by pipeline_cache_counters()).
  bool creation_feedback = false;
  uint8_t driver_uuid[VK_UUID_SIZE] = {};   // VkPhysicalDeviceIDProperties: part of the cache key
  std::string name;
  // QUIVER_VULKAN_VALIDATION=1 only: the instance's messenger (owned by the shared instance).
  const Validation* validation = nullptr;

  // Throws quiver::Error (DeviceError, or OutOfMemory for the two out-of-memory codes).
  void check(VkResult result, const std::string& what) const;

  // What an allocation is for (memory_choice.h): Device, Host, Unified or Upload.
  using Memory = MemoryUse;
  Allocation allocate(VkDeviceSize size, VkBufferUsageFlags usage, Memory memory,
                      const std::string& what);
  void release(Allocation& allocation) noexcept;

  // A recycled (or new) slot whose pool holds >= `descriptors` and whose args buffer holds
  // >= `args_bytes`; its command buffer is ready to begin. Hand it back with submit() or abandon().
  LaunchSlot& acquire_slot(uint32_t descriptors, VkDeviceSize args_bytes);
  void submit(LaunchSlot& slot);
  void abandon(LaunchSlot& slot) noexcept;
  // Records the closing barrier, ends and submits a recorded launch (its dispatch the last
  // command); while a timer runs, the launch is held open instead
  // (until the next operation on the queue, or the timer's stop, which writes its end
  // timestamp into this same command buffer).
  void finish_launch(LaunchSlot& slot);
  // Ends and submits the held launch, if any. Every operation that submits or waits calls it.
  void flush_held();

  // Recorded launch sequences (Device::record): a secondary command buffer, begun for
  // simultaneous use (a replay may be queued while the last one runs), freed by free_secondary
  // once no submission uses it; submit_secondary queues one execution of it as a launch is
  // queued (after a barrier against earlier work, timed by a running timer, fenced).
  VkCommandBuffer begin_secondary();
  void free_secondary(VkCommandBuffer commands) noexcept;
  void submit_secondary(VkCommandBuffer commands, const std::string& name);

  // Waits for every submission. `what` names the operation in the error; the error also names
  // the kernel whose submission failed.
  void drain(const std::string& what);
  void drain_noexcept() noexcept;
  bool has_pending() const { return !pending_.empty() || held_; }

  // Staged copies for device-local buffers (drain first; synchronous).
  void copy_to_device(const Allocation& dst, const void* src, size_t bytes);
  void copy_from_device(const Allocation& src, void* dst, size_t bytes);

  // Aligned stride of one scalar argument inside a slot's args buffer.
  VkDeviceSize scalar_stride() const;

  // Device::elapsed_ms (query 0 = start, 1 = end; the start also resets the pair). The start
  // is written by the next launch's own command buffer, after its barrier and just before its
  // dispatch (record_timer_start), not by a submission of its own: that one would run at once
  // and count the host's time to record and submit the launch as GPU time (tens of us against
  // ~100 us kernels). stop_timer: a timestamp after everything queued so far, written by the
  // last launch's own command buffer when the timer ran around launches (finish_launch held it
  // open): a submission of its own would add the gap between two submissions, about 14 us on
  // the H100 (driver 580), to every timed kernel. timer_ms: the
  // milliseconds between the pair once the queue has drained. start_timer throws when the
  // queue family has no timestamps.
  // Timers may be many in flight (Device::elapsed_ms_each): each has its own slot, recycled by
  // timer_ms or release_timer.
  TimerSlot& start_timer();
  void record_timer_start(LaunchSlot& slot);
  void stop_timer(TimerSlot& timer);
  double timer_ms(TimerSlot& timer);
  void release_timer(TimerSlot& timer) noexcept;   // a timer dropped without timer_ms

 private:
  void retire_completed();
  void wait_and_retire_front(const std::string& what);
  void destroy_slot(LaunchSlot& slot) noexcept;
  void ensure_staging(size_t bytes);
  TimerSlot& new_timer();
  void run_transfer(const Allocation& buffer, VkDeviceSize offset, VkDeviceSize bytes, bool to_device);

  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<LaunchSlot>> slots_;
  std::vector<LaunchSlot*> free_;
  std::deque<LaunchSlot*> pending_;   // submitted, oldest first
  Allocation staging_;
  VkCommandBuffer transfer_commands_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<TimerSlot>> timers_;
  std::vector<TimerSlot*> free_timers_;
  TimerSlot* armed_timer_ = nullptr;   // started; the next launch records its start timestamp
  TimerSlot* running_timer_ = nullptr;   // started, not stopped: launches are held (finish_launch)
  LaunchSlot* held_ = nullptr;           // recorded, not ended nor submitted
  uint32_t timestamp_bits_ = 0;
};

// VkInstances this backend has created in this process (a test hook: a program that does not
// change the loader's environment creates exactly one, however many Devices it opens).
size_t instances_created();

// Records a global memory barrier: everything earlier on the queue (kernels, copies, host
// writes) happens-before everything later.
void record_full_barrier(const Api& vk, VkCommandBuffer cb);
// Records a barrier from the kernels earlier in `cb` to the kernels later in it (compute to
// compute, shader writes to shader reads and writes): what a graph's launches need between them,
// its submission's full barriers covering copies and host access before and after.
void record_kernel_barrier(const Api& vk, VkCommandBuffer cb);

}  // namespace quiver::backend::vulkan
