// RUN: %quiver-opt %S/../Inputs/matrix_kernel.mlir --qv-expand-matrix | %FileCheck %s
// RUN: %quiver-opt %S/../Inputs/matrix_kernel.mlir --qv-expand-matrix=keep=mma | %FileCheck %s --check-prefix=KEEP
// The portable fallback: every lane holds the whole tile as vector<256 x f32>; mma is fused
// multiply-adds; the qv.matrix_* operations go. A kept kernel keeps them.

// CHECK-LABEL: func.func @mma
// CHECK: math.fma {{.*}} : vector<256xf32>
// CHECK-NOT: qv.matrix

// KEEP-LABEL: func.func @mma
// KEEP: qv.matrix_mma
