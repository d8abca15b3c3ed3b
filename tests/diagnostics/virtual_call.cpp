// EXPECT: 6:53: error: virtual calls are not supported in kernel code
#include <quiver/kernel.h>

struct Shape { virtual float area() const { return 1.0f; } };
constexpr Shape kShape{};
QV_KERNEL void k(float* y) { y[qv::thread_id_x()] = kShape.area(); }
