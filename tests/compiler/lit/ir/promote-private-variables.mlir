// RUN: %quiver-opt %s --qv-promote-private-variables | %FileCheck %s
// A thread's own variable (default memory space) becomes an SSA value; a workgroup array of one
// element (a flag the block shares) stays memory.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%out: memref<?xf32>, %x: f32) attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
  %c0 = arith.constant 0 : index
  // CHECK-NOT: memref.alloca() : memref<f32>
  // CHECK: %[[FLAG:.*]] = memref.alloca() : memref<f32, #gpu.address_space<workgroup>>
  %private = memref.alloca() : memref<f32>
  %shared = memref.alloca() : memref<f32, #gpu.address_space<workgroup>>
  memref.store %x, %private[] : memref<f32>
  memref.store %x, %shared[] : memref<f32, #gpu.address_space<workgroup>>
  %p = memref.load %private[] : memref<f32>
  %s = memref.load %shared[] : memref<f32, #gpu.address_space<workgroup>>
  // CHECK: %[[S:.*]] = memref.load %[[FLAG]][]
  // CHECK: arith.addf %arg1, %[[S]]
  %sum = arith.addf %p, %s : f32
  memref.store %sum, %out[%c0] : memref<?xf32>
  return
}
