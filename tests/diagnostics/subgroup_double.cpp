// EXPECT: 4:59: error: call to 'subgroup_sum' is ambiguous
#include <quiver/kernel.h>

QV_KERNEL QV_TARGETS(ptx, cpu) void k(double* y) { y[0] = qv::subgroup_sum(y[0]); }
