// RUN: %quiver-opt %S/../Inputs/launch_wait_kernel.mlir --qv-erase-launch-waits | %FileCheck %s
// A target whose launches never overlap drops the wait; the loads around it stay in order.

// CHECK-LABEL: func.func @step
// CHECK: memref.load %arg0
// CHECK-NEXT: memref.load %arg1
// CHECK-NOT: qv.wait_prior_launches
