// RUN: %quiver-opt %s --qv-expand-dot4-i8 | %FileCheck %s
// qv.dot4_i8 becomes byte-lane arithmetic (sign-extended bytes, multiplied and added to the
// accumulator).

// CHECK-LABEL: func.func @kernel
func.func @kernel(%out: memref<?xi32>, %a: i32, %b: i32, %c: i32) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  // CHECK-NOT: qv.dot4_i8
  // CHECK-COUNT-4: arith.muli
  // CHECK-NOT: qv.dot4_i8
  %d = qv.dot4_i8 %a, %b, %c
  memref.store %d, %out[%c0] : memref<?xi32>
  return
}
