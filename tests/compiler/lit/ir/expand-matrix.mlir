// RUN: %quiver-opt %S/../Inputs/matrix_kernel.mlir --qv-expand-matrix | %FileCheck %s
// RUN: %quiver-opt %S/../Inputs/matrix_kernel.mlir --qv-expand-matrix=keep=mma | %FileCheck %s --check-prefix=KEEP
// The portable fallback: every lane holds the whole tile as vector<256 x f32>; mma is fused
// multiply-adds; the intrinsics and their declarations go. A kept kernel keeps its calls.

// CHECK-NOT: func.func private @qv.matrix
// CHECK-LABEL: func.func @mma
// CHECK: math.fma {{.*}} : vector<256xf32>
// CHECK-NOT: call @qv.matrix

// KEEP: func.func private @qv.matrix_mma.f16
// KEEP-LABEL: func.func @mma
// KEEP: call @qv.matrix_mma.f16
