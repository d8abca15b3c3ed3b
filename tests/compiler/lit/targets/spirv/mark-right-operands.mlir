// RUN: %quiver-opt %S/../../Inputs/matrix_kernel.mlir --qv-spirv-mark-right-operands=kernels=mma | %FileCheck %s
// RUN: ! %quiver-opt %S/../../Inputs/matrix_kernel.mlir --qv-spirv-mark-right-operands=kernels=missing 2>&1 | %FileCheck %s --check-prefix=MISSING
// In a kernel whose tiles become cooperative matrices, B tiles (loads of B, mma's second
// operand) are vector<16 x 16 x T>; A and accumulator tiles keep their type.

// CHECK-LABEL: func.func @mma
// CHECK: qv.matrix_load a {{.*}} -> vector<256xf16>
// CHECK: qv.matrix_load b {{.*}} -> vector<16x16xf16>
// CHECK: qv.matrix_mma {{.*}} : vector<256xf16>, vector<16x16xf16>, vector<256xf32>

// MISSING: error: no kernel 'missing' (func.func with qv.kernel and a body) in the module
