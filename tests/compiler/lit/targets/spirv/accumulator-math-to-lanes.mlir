// RUN: %quiver-opt %s --qv-spirv-accumulator-math-to-lanes=kernels=row_max | %FileCheck %s
// RUN: ! %quiver-opt %s --qv-spirv-accumulator-math-to-lanes=kernels=odd_block 2>&1 | %FileCheck %s --check-prefix=ODD
// A row maximum of a product's tile, which cooperative matrices cannot compute: the accumulator
// goes through the subgroup's workgroup scratch (a subgroup barrier on each side of the store),
// lane L reads its share (row L / 2, eight columns from 8 (L % 2)) as two 4-wide loads, reduces
// it in lane and with lane L ^ 1, and stores the share where the tile's row maxima go. Products,
// their loads and stores stay tiles; the subgroup size folds to 32, which the image requires.

// CHECK-LABEL: func.func @row_max
// CHECK: %[[SCRATCH:.*]] = memref.alloca() : memref<256xf32, #gpu.address_space<workgroup>>
// CHECK: %[[D:.*]] = qv.matrix_mma
// CHECK-NEXT: qv.subgroup_barrier
// CHECK: qv.matrix_store %[[D]], %[[SCRATCH]]
// CHECK-NEXT: qv.subgroup_barrier
// CHECK: vector.load %[[SCRATCH]]{{.*}} vector<4xf32>
// CHECK: vector.load %[[SCRATCH]]{{.*}} vector<4xf32>
// CHECK-COUNT-7: arith.maxnumf
// CHECK: gpu.shuffle  xor
// CHECK-NEXT: arith.maxnumf
// CHECK: qv.matrix_store %[[D]], %{{.*}} : vector<256xf32>, memref<?xf32>
// CHECK: vector.store {{.*}} : memref<?xf32>, vector<4xf32>
// CHECK: vector.store {{.*}} : memref<?xf32>, vector<4xf32>
// CHECK: %[[LANES:.*]] = arith.constant 32 : index
// CHECK-NEXT: memref.store %[[LANES]]
// CHECK-NOT: gpu.subgroup_size
// CHECK: return

// ODD: error: odd_block: lane shares cannot take its tiles: a block of 48 threads (lane shares need whole subgroups of 32)
module {
  func.func @row_max(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf32>, %m: memref<?xf32>, %ld: i32, %n: memref<?xindex>)
      attributes {qv.block = array<i32: 32, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %ta = qv.matrix_load a %a[%c0], %ld : memref<?xf16> -> vector<256xf16>
    %tb = qv.matrix_load b %b[%c0], %ld : memref<?xf16> -> vector<256xf16>
    %tc = qv.matrix_load acc %c[%c0], %ld : memref<?xf32> -> vector<256xf32>
    %d = qv.matrix_mma %ta, %tb, %tc : vector<256xf16>, vector<256xf16>, vector<256xf32>
    %mx = qv.matrix_row_max %d : vector<256xf32>
    qv.matrix_store %d, %c[%c0], %ld : vector<256xf32>, memref<?xf32>
    qv.matrix_store %mx, %m[%c0], %ld : vector<256xf32>, memref<?xf32>
    %lanes = gpu.subgroup_size : index
    memref.store %lanes, %n[%c0] : memref<?xindex>
    return
  }
  func.func @odd_block(%a: memref<?xf16>, %c: memref<?xf32>, %ld: i32)
      attributes {qv.block = array<i32: 48, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %ta = qv.matrix_load a %a[%c0], %ld : memref<?xf16> -> vector<256xf16>
    %tc = qv.matrix_load acc %c[%c0], %ld : memref<?xf32> -> vector<256xf32>
    %d = qv.matrix_mma %ta, %ta, %tc : vector<256xf16>, vector<256xf16>, vector<256xf32>
    %mx = qv.matrix_row_max %d : vector<256xf32>
    qv.matrix_store %mx, %c[%c0], %ld : vector<256xf32>, memref<?xf32>
    return
  }
}
