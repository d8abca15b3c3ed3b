// RUN: %quiver-opt %S/../Inputs/warpgroup_kernel.mlir --qv-expand-warpgroup | %FileCheck %s
// RUN: %quiver-opt %S/../Inputs/warpgroup_kernel.mlir --qv-expand-warpgroup=keep-mma=true | %FileCheck %s --check-prefix=KEEP
// Stores are always stores of pairs of adjacent columns; the product becomes the per-thread fallback (fused
// multiply-adds from shared memory) and commit / wait nothing, unless keep-mma.

// CHECK-LABEL: func.func @warpgroup
// CHECK: math.fma
// CHECK-NOT: qv.warpgroup
// CHECK: vector.store {{.*}} : memref<?xf32>, vector<2xf32>

// KEEP-LABEL: func.func @warpgroup
// KEEP: qv.warpgroup_mma %
// KEEP: qv.warpgroup_commit
// KEEP: qv.warpgroup_wait 0
// KEEP-NOT: qv.warpgroup_store
// KEEP-COUNT-8: vector.store {{.*}} : memref<?xf32>, vector<2xf32>
