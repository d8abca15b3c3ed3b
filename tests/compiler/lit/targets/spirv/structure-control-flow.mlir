// RUN: %quiver-opt %s --qv-spirv-structure-control-flow | %FileCheck %s
// scf.index_switch becomes a chain of scf.if; a single-block scf.execute_region is inlined.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%out: memref<?xi32>, %i: index) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  // CHECK-NOT: scf.index_switch
  // CHECK-NOT: scf.execute_region
  // CHECK: scf.if
  // CHECK: scf.if
  %r = scf.index_switch %i -> i32
  case 1 {
    %one = arith.constant 10 : i32
    scf.yield %one : i32
  }
  case 2 {
    %two = arith.constant 20 : i32
    scf.yield %two : i32
  }
  default {
    %d = scf.execute_region -> i32 {
      %z = arith.constant 30 : i32
      scf.yield %z : i32
    }
    scf.yield %d : i32
  }
  memref.store %r, %out[%c0] : memref<?xi32>
  return
}
