// RUN: %quiver-opt %s --qv-hsaco-dot4-to-sdot4 | %FileCheck %s
// qv.dot4_i8 is llvm.amdgcn.sdot4 without clamping.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%a: i32, %b: i32, %c: i32) -> i32 {
  // CHECK: %[[NO_CLAMP:.*]] = llvm.mlir.constant(false) : i1
  // CHECK: %[[D:.*]] = llvm.call_intrinsic "llvm.amdgcn.sdot4"(%arg0, %arg1, %arg2, %[[NO_CLAMP]])
  // CHECK: return %[[D]]
  %d = qv.dot4_i8 %a, %b, %c
  return %d : i32
}
