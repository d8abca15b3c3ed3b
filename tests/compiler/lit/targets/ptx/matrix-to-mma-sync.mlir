// RUN: %quiver-opt %S/../../Inputs/matrix_kernel.mlir --qv-ptx-matrix-to-mma-sync | %FileCheck %s
// Each lane holds its fragment (vector<8 x T>) and the product is mma.sync inline PTX.

// CHECK-LABEL: func.func @mma
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: qv.matrix
