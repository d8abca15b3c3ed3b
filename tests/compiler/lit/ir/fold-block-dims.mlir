// RUN: %quiver-opt %s --qv-fold-block-dims | %FileCheck %s
// gpu.block_dim is the kernel's qv.block size; thread_id along an axis of size 1 is 0; other
// thread ids and functions without qv.block stay.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%out: memref<?xindex>) attributes {qv.kernel, qv.block = array<i32: 64, 2, 1>} {
  // CHECK-NOT: gpu.block_dim
  // CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
  // CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[TY:.*]] = gpu.thread_id y
  // CHECK-NOT: gpu.thread_id z
  %bx = gpu.block_dim x
  %by = gpu.block_dim y
  %ty = gpu.thread_id y
  %tz = gpu.thread_id z
  // CHECK: memref.store %[[C64]], %{{.*}}[%[[TY]]]
  memref.store %bx, %out[%ty] : memref<?xindex>
  // CHECK: memref.store %[[C2]], %{{.*}}[%[[C0]]]
  memref.store %by, %out[%tz] : memref<?xindex>
  return
}

// CHECK-LABEL: func.func @helper
func.func @helper() -> index {
  // CHECK: gpu.block_dim x
  %bx = gpu.block_dim x
  return %bx : index
}
