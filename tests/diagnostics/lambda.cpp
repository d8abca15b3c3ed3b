// EXPECT: 5:8: error: type 'class (lambda at /work/main/tests/diagnostics/lambda.cpp:5:16)' is not supported in kernel code (use bool, the fixed-width integers, float, double, qv::half or qv::bf16)
#include <quiver/kernel.h>

QV_KERNEL void k(float* y) {
  auto twice = [](float v) { return 2.0f * v; };
  y[0] = twice(y[0]);
}
