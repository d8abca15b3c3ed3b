// RUN: %quiver-opt %S/../../Inputs/warpgroup_kernel.mlir --pass-pipeline="builtin.module(qv-expand-warpgroup{keep-mma=true},qv-ptx-warpgroup-to-wgmma)" | %FileCheck %s
// The product is Hopper's wgmma with its fences; commit and wait are wgmma's group operations.

// CHECK-LABEL: func.func @warpgroup
// CHECK: wgmma.fence
// CHECK: wgmma.mma_async
// CHECK: wgmma.commit_group
// CHECK: wgmma.wait_group
// CHECK-NOT: qv.warpgroup
