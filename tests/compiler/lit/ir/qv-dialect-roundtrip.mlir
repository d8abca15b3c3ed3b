// RUN: %quiver-opt %s | %quiver-opt | %FileCheck %s
// Every qv operation in each form docs/matrix.md allows prints and parses back as itself.

!sa = memref<8192xbf16, #gpu.address_space<workgroup>>
!s8 = memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK-LABEL: func.func @warpgroup
func.func @warpgroup(%a: !sa, %a8: !s8, %g: memref<?xbf16>, %g32: memref<?xi32>, %i: index, %s: i32,
                     %c: vector<128xf32>, %ci: vector<8xi32>) {
  // CHECK: %[[D:.*]] = qv.warpgroup_mma %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} : memref<8192xbf16, #gpu.address_space<workgroup>>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<128xf32>
  %d = qv.warpgroup_mma %a[%i], %a[%i], %s, %c : !sa, !sa, vector<128xf32>
  // CHECK: qv.warpgroup_mma_bt {{.*}} : memref<16384xi8, #gpu.address_space<workgroup>>, memref<16384xi8, #gpu.address_space<workgroup>>, vector<8xi32>
  %e = qv.warpgroup_mma_bt %a8[%i], %a8[%i], %ci : !s8, !s8, vector<8xi32>
  // CHECK: qv.warpgroup_commit
  qv.warpgroup_commit
  // CHECK: qv.warpgroup_wait 3
  qv.warpgroup_wait 3
  // CHECK: qv.warpgroup_barrier
  qv.warpgroup_barrier
  // CHECK: qv.warpgroup_store %[[D]], %{{.*}}[%{{.*}}], %{{.*}} : vector<128xf32>, memref<?xbf16>
  qv.warpgroup_store %d, %g[%i], %s : vector<128xf32>, memref<?xbf16>
  // CHECK: qv.warpgroup_store %{{.*}} : vector<8xi32>, memref<?xi32>
  qv.warpgroup_store %e, %g32[%i], %s : vector<8xi32>, memref<?xi32>
  // CHECK: qv.warpgroup_store_bounded %[[D]], %{{.*}}[%{{.*}}], %{{.*}}, bounds %{{.*}}, %{{.*}} : vector<128xf32>, memref<?xbf16>
  qv.warpgroup_store_bounded %d, %g[%i], %s, bounds %s, %s : vector<128xf32>, memref<?xbf16>
  // CHECK: qv.warpgroup_store_swizzled %[[D]], %{{.*}} : vector<128xf32>, memref<8192xbf16, #gpu.address_space<workgroup>>
  qv.warpgroup_store_swizzled %d, %a[%i], %s : vector<128xf32>, !sa
  return
}

// CHECK-LABEL: func.func @async_copy_marks
func.func @async_copy_marks() {
  // CHECK-NEXT: qv.copy_async_commit
  qv.copy_async_commit
  // CHECK-NEXT: qv.copy_async_wait 7
  qv.copy_async_wait 7
  return
}

// CHECK-LABEL: func.func @dot4
func.func @dot4(%a: i32, %b: i32, %c: i32) -> i32 {
  // CHECK-NEXT: %[[D:.*]] = qv.dot4_i8 %arg0, %arg1, %arg2
  %d = qv.dot4_i8 %a, %b, %c
  // CHECK-NEXT: return %[[D]] : i32
  return %d : i32
}
