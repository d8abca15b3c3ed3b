// ThreadSanitizer and the CPU backend's fibers. TSan keeps a shadow call stack and a
// happens-before clock per thread; a hand-written stack switch (fiber.h) moves execution between
// fibers without telling it, which corrupts both. Under TSan the backend therefore tells the
// runtime about every switch through its fiber API; in every other build these are no-ops.
//
// Rules the callers follow: QV_TSAN_SWITCH_TO(target) immediately before qv_cpu_fiber_switch, with no
// instrumented code in between; a function that switches away and is never resumed (a fiber's
// entry) is compiled without TSan instrumentation (QV_NO_TSAN), so it leaves no unbalanced frame
// on the fiber's shadow stack when the fiber is reused for the next block.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define QV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QV_TSAN 1
#endif
#endif

#if defined(QV_TSAN)
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#if defined(__clang__)
#define QV_NO_TSAN __attribute__((disable_sanitizer_instrumentation))
#else
#define QV_NO_TSAN __attribute__((no_sanitize_thread))
#endif
#else
#define QV_NO_TSAN
#endif

// Macros, not inline functions: an out-of-line helper would itself be instrumented, entering
// its frame on one fiber's shadow stack and leaving it on the other's.
#if defined(QV_TSAN)
#define QV_TSAN_CURRENT_FIBER() __tsan_get_current_fiber()
#define QV_TSAN_CREATE_FIBER() __tsan_create_fiber(0)
#define QV_TSAN_DESTROY_FIBER(fiber) \
  do {                               \
    if ((fiber) != nullptr) __tsan_destroy_fiber(fiber); \
  } while (0)
// Flags 0: the switch synchronises the two fibers (a barrier orders their memory accesses).
#define QV_TSAN_SWITCH_TO(fiber) __tsan_switch_to_fiber((fiber), 0)
#else
#define QV_TSAN_CURRENT_FIBER() nullptr
#define QV_TSAN_CREATE_FIBER() nullptr
#define QV_TSAN_DESTROY_FIBER(fiber) ((void)(fiber))
#define QV_TSAN_SWITCH_TO(fiber) ((void)(fiber))
#endif
