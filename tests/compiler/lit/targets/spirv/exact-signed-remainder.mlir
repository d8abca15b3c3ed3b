// RUN: %quiver-opt %s --qv-spirv-exact-signed-remainder | %FileCheck %s
// In kernels, a % b is a - (a / b) * b (exact for INT_MIN, unlike MLIR 19's Vulkan remsi);
// functions that are not kernels are not the target's.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%out: memref<?xi64>, %a: i64, %b: i64) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  // CHECK: %[[Q:.*]] = arith.divsi %arg1, %arg2 : i64
  // CHECK: %[[P:.*]] = arith.muli %[[Q]], %arg2 : i64
  // CHECK: %[[R:.*]] = arith.subi %arg1, %[[P]] : i64
  // CHECK-NOT: arith.remsi
  // CHECK: memref.store %[[R]]
  %r = arith.remsi %a, %b : i64
  memref.store %r, %out[%c0] : memref<?xi64>
  return
}

// CHECK-LABEL: func.func @not_a_kernel
func.func @not_a_kernel(%a: i32, %b: i32) -> i32 {
  // CHECK: arith.remsi
  %r = arith.remsi %a, %b : i32
  return %r : i32
}
