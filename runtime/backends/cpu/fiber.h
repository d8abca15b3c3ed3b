// Minimal stackful fibers for the CPU backend: the threads of a block that uses qv::barrier()
// run as fibers on one worker thread, and barrier() switches to the next fiber. Only the
// callee-saved registers are switched (the switch is an ordinary function call to the
// compiler), which is all a cooperative switch needs; no signal masks, unlike swapcontext.
#pragma once

#include <cstddef>
#include <cstdint>

namespace quiver::backend::cpu {

// Saves the current context, stores its stack pointer in *save_sp, and resumes the context
// whose stack pointer is `resume_sp` (one saved by an earlier switch or made by
// fiber_prepare). Returns when something switches back to the saved context.
extern "C" void qv_cpu_fiber_switch(void** save_sp, void* resume_sp);

// Lays out a fresh context on the stack ending at `stack_top` (exclusive, 16-byte aligned) so
// that the first switch to the returned stack pointer calls entry(arg). `entry` must never
// return: it ends by switching away for good.
void* fiber_prepare(void* stack_top, void (*entry)(void*), void* arg);

// `count` stacks of `stack_bytes` each in one anonymous mapping, each with a PROT_NONE guard
// page below it so an overflow faults instead of corrupting the neighbouring fiber. Pages are
// committed only when touched, so many mostly-idle stacks stay cheap. Grows on demand and is
// reused across launches.
class FiberStacks {
 public:
  static constexpr size_t kStackBytes = 64 * 1024;
  FiberStacks() = default;
  FiberStacks(const FiberStacks&) = delete;
  FiberStacks& operator=(const FiberStacks&) = delete;
  ~FiberStacks();
  // Makes room for at least `count` stacks; throws quiver::Error(OutOfMemory) on failure.
  void reserve(size_t count);
  void* top(size_t index) const;   // 16-byte aligned end of stack `index`

 private:
  void* base_ = nullptr;
  size_t count_ = 0;
  size_t slot_bytes_ = 0;   // guard page + stack
  size_t mapped_bytes_ = 0;
};

}  // namespace quiver::backend::cpu
