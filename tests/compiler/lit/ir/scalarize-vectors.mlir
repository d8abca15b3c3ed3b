// RUN: %quiver-opt %s --qv-scalarize-vectors | %FileCheck %s
// RUN: %quiver-opt %s --qv-scalarize-vectors="wide-buffer-access=true" | %FileCheck %s --check-prefix=WIDE
// No vector values remain: a float4 load and add become four scalar loads and adds. With
// wide-buffer-access the 16-byte access is one access to a view of the buffer as 32-bit words
// (extra arguments, one per buffer, naming in qv.buffer_views the parameter each views).

// CHECK-LABEL: func.func @kernel
// CHECK-NOT: vector<
// CHECK-COUNT-4: memref.load %arg0
// CHECK-COUNT-4: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: memref.store

// WIDE-LABEL: func.func @kernel
// WIDE-SAME: %arg2: memref<?xvector<4xi32>>, %arg3: memref<?xvector<4xi32>>
// WIDE-SAME: qv.buffer_views = array<i32: 0, 1>
// WIDE: memref.load %arg2[%{{.*}}] : memref<?xvector<4xi32>>
// WIDE: memref.store %{{.*}}, %arg3[%{{.*}}] : memref<?xvector<4xi32>>
func.func @kernel(%x: memref<?xvector<4xf32>>, %y: memref<?xvector<4xf32>>) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<?xvector<4xf32>>
  %w = arith.addf %v, %v : vector<4xf32>
  memref.store %w, %y[%c0] : memref<?xvector<4xf32>>
  return
}
