// RUN: %quiver-opt %s --pass-pipeline="builtin.module(qv-structure,qv-spirv-top-tested-loops)" | %FileCheck %s --check-prefix=TOP
// RUN: %quiver-opt %s --pass-pipeline="builtin.module(qv-structure)" | %FileCheck %s --check-prefix=LIFTED
// The front end's loop (cf branches) lifted to scf is a do-while: the body under an scf.if in the
// "before" region. The pass moves the body to the "after" region, the test alone at the top.

// LIFTED-LABEL: func.func @kernel
// LIFTED: scf.while
// LIFTED: scf.if
// LIFTED: memref.store
// LIFTED: scf.condition
// LIFTED: } do {
// LIFTED-NEXT: ^bb0
// LIFTED-NEXT: scf.yield

// TOP-LABEL: func.func @kernel
// TOP: scf.while
// TOP-NOT: scf.if
// TOP-NOT: memref.store
// TOP: scf.condition
// TOP: } do {
// TOP: memref.store
// TOP: scf.yield
func.func @kernel(%out: memref<?xi32>, %n: i32) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  cf.br ^header(%c0 : i32)
^header(%i: i32):
  %more = arith.cmpi slt, %i, %n : i32
  cf.cond_br %more, ^body, ^exit
^body:
  %idx = arith.index_cast %i : i32 to index
  memref.store %i, %out[%idx] : memref<?xi32>
  %next = arith.addi %i, %c1 : i32
  cf.br ^header(%next : i32)
^exit:
  return
}
