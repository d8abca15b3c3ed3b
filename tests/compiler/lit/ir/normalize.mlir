// RUN: %quiver-opt %s --qv-normalize | %FileCheck %s
// The front end's locals (allocas it stores to and loads from) become SSA values, the block
// dimension its constant, code after a return goes; control flow stays cf.

// CHECK-LABEL: func.func @kernel
// CHECK-NOT: memref.alloca
// CHECK-NOT: gpu.block_dim
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: memref.store %[[C16]]
func.func @kernel(%out: memref<?xindex>) attributes {qv.kernel, qv.block = array<i32: 16, 1, 1>} {
  %c0 = arith.constant 0 : index
  %local = memref.alloca() : memref<index>
  %bx = gpu.block_dim x
  memref.store %bx, %local[] : memref<index>
  %v = memref.load %local[] : memref<index>
  memref.store %v, %out[%c0] : memref<?xindex>
  return
}
