// Context switch for the CPU backend's fibers (see fiber.h), written as file-scope assembly so
// no assembler language needs enabling in CMake. Each architecture saves exactly the registers
// its C ABI calls callee-saved, plus the FP control state the ABI requires callers to see
// unchanged, on the current stack; the stack pointer is the whole saved context.
#include "backends/cpu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "quiver/runtime.h"

#if defined(__x86_64__)
// System V AMD64: rbx, rbp, r12-r15, MXCSR control bits and the x87 control word.
// Saved frame, from the stack pointer up: [mxcsr:4][x87cw:2][pad:2] r15 r14 r13 r12 rbx rbp ret.
asm(R"(
  .text
  .globl qv_cpu_fiber_switch
  .hidden qv_cpu_fiber_switch
  .type qv_cpu_fiber_switch, @function
  .p2align 4
qv_cpu_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size qv_cpu_fiber_switch, .-qv_cpu_fiber_switch

  .globl qv_cpu_fiber_start
  .hidden qv_cpu_fiber_start
  .type qv_cpu_fiber_start, @function
  .p2align 4
qv_cpu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size qv_cpu_fiber_start, .-qv_cpu_fiber_start
)");
#elif defined(__aarch64__)
// AAPCS64: x19-x28, x29 (frame pointer), x30 (link register) and the low halves d8-d15.
// Saved frame, from the stack pointer up: x19..x30 (96 bytes), d8..d15 (64 bytes).
asm(R"(
  .text
  .globl qv_cpu_fiber_switch
  .hidden qv_cpu_fiber_switch
  .type qv_cpu_fiber_switch, %function
  .p2align 4
qv_cpu_fiber_switch:
  sub sp, sp, #160
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #160
  ret
  .size qv_cpu_fiber_switch, .-qv_cpu_fiber_switch

  .globl qv_cpu_fiber_start
  .hidden qv_cpu_fiber_start
  .type qv_cpu_fiber_start, %function
  .p2align 4
qv_cpu_fiber_start:
  mov x0, x19
  blr x20
  brk #1
  .size qv_cpu_fiber_start, .-qv_cpu_fiber_start
)");
#else
#error "the CPU backend's fibers support x86-64 and aarch64 hosts only"
#endif

extern "C" void qv_cpu_fiber_start();

namespace quiver::backend::cpu {

void* fiber_prepare(void* stack_top, void (*entry)(void*), void* arg) {
  auto* top = static_cast<uint64_t*>(stack_top);
#if defined(__x86_64__)
  // 8 words: control word slot, r15, r14, r13 (entry), r12 (arg), rbx, rbp, return address.
  // After the final `ret` the stack pointer is stack_top (16-byte aligned), so the trampoline's
  // `call` enters `entry` with the alignment the ABI expects.
  uint64_t* sp = top - 8;
  std::memset(sp, 0, 8 * sizeof(uint64_t));
  const uint32_t mxcsr_default = 0x1F80;   // all exceptions masked, round to nearest
  const uint16_t x87cw_default = 0x037F;   // all exceptions masked, 64-bit precision, nearest
  std::memcpy(reinterpret_cast<char*>(sp), &mxcsr_default, 4);
  std::memcpy(reinterpret_cast<char*>(sp) + 4, &x87cw_default, 2);
  sp[3] = reinterpret_cast<uint64_t>(entry);             // r13
  sp[4] = reinterpret_cast<uint64_t>(arg);               // r12
  sp[7] = reinterpret_cast<uint64_t>(&qv_cpu_fiber_start);
  return sp;
#else
  // 20 words: x19 (arg), x20 (entry), x21..x28, x29 = 0, x30 = trampoline, d8..d15.
  uint64_t* sp = top - 20;
  std::memset(sp, 0, 20 * sizeof(uint64_t));
  sp[0] = reinterpret_cast<uint64_t>(arg);
  sp[1] = reinterpret_cast<uint64_t>(entry);
  sp[11] = reinterpret_cast<uint64_t>(&qv_cpu_fiber_start);
  return sp;
#endif
}

FiberStacks::~FiberStacks() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

void FiberStacks::reserve(size_t count) {
  if (count <= count_) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t slot = page + ((kStackBytes + page - 1) / page) * page;
  const size_t bytes = slot * count;
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    throw Error(ErrorCode::OutOfMemory, "cpu backend: cannot map " + std::to_string(count) +
                                            " fiber stacks (" + std::to_string(bytes) + " bytes)");
  }
  for (size_t i = 0; i < count; ++i) {
    if (mprotect(static_cast<char*>(base) + i * slot, page, PROT_NONE) != 0) {
      munmap(base, bytes);
      throw Error(ErrorCode::OutOfMemory, "cpu backend: cannot protect fiber stack guard pages");
    }
  }
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
  base_ = base;
  count_ = count;
  slot_bytes_ = slot;
  mapped_bytes_ = bytes;
}

void* FiberStacks::top(size_t index) const {
  return static_cast<char*>(base_) + (index + 1) * slot_bytes_;
}

}  // namespace quiver::backend::cpu
