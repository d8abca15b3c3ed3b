// EXPECT: 4:11: error: unknown target 'cuda' in QV_TARGETS (known: ptx, spirv, cpu, hsaco, msl, wgsl, each optionally with one arch: ptx:sm_90a)
#include <quiver/kernel.h>

QV_KERNEL QV_TARGETS(ptx, cuda) void k(float* y) { y[0] = 1.0f; }
