// RUN: %quiver-opt %s --qv-structure | %FileCheck %s
// The front end's cf branches become structured control flow; no cf remains.

// CHECK-LABEL: func.func @kernel
// CHECK-NOT: cf.
// CHECK: scf.if
// CHECK-NOT: cf.
func.func @kernel(%out: memref<?xi32>, %x: i32) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  %positive = arith.cmpi sgt, %x, %zero : i32
  cf.cond_br %positive, ^store, ^done
^store:
  memref.store %x, %out[%c0] : memref<?xi32>
  cf.br ^done
^done:
  return
}
