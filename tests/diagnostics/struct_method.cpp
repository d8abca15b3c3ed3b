// EXPECT: 9:7: error: type 'Acc' is not supported in kernel code (use bool, the fixed-width integers, float, double, qv::half or qv::bf16)
#include <quiver/kernel.h>

struct Acc {
  float total;
  float add(float v) { return total + v; }
};
QV_KERNEL void k(float* y) {
  Acc acc{0.0f};
  y[0] = acc.add(1.0f);
}
