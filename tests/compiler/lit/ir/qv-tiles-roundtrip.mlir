// RUN: %quiver-opt %s | %quiver-opt | %FileCheck %s
// The matrix- and block-tile operations print and parse back as themselves in every form the
// passes give them: whole tiles (the front end's), right operands as vector<K x 16 x T> (the
// spirv cooperative-matrix image), a lane's fragment or share, word arrays (qv-scalarize-vectors)
// and 16-bit floats as i16 bits (qv-16bit-floats-as-bits).

!sh = memref<4096xf16, #gpu.address_space<workgroup>>
!s8 = memref<8192xi8, #gpu.address_space<workgroup>>
!words = memref<512xvector<4xi32>, #gpu.address_space<workgroup>>

// CHECK-LABEL: func.func @whole_tiles
func.func @whole_tiles(%g: memref<?xbf16>, %s: !sh, %s8: !s8, %c: memref<?xf32>, %c32: memref<?xi32>, %i: index,
                       %ld: i32) {
  // CHECK: %[[A:.*]] = qv.matrix_load a %{{.*}}[%{{.*}}], %{{.*}} : memref<?xbf16> -> vector<256xbf16>
  %a = qv.matrix_load a %g[%i], %ld : memref<?xbf16> -> vector<256xbf16>
  // CHECK: %[[B:.*]] = qv.matrix_load b %{{.*}} : memref<?xbf16> -> vector<256xbf16>
  %b = qv.matrix_load b %g[%i], %ld : memref<?xbf16> -> vector<256xbf16>
  // CHECK: qv.matrix_load bt %{{.*}} : memref<4096xf16, #gpu.address_space<workgroup>> -> vector<256xf16>
  %bt = qv.matrix_load bt %s[%i], %ld : !sh -> vector<256xf16>
  // CHECK: %[[C:.*]] = qv.matrix_load acc %{{.*}} : memref<?xf32> -> vector<256xf32>
  %acc = qv.matrix_load acc %c[%i], %ld : memref<?xf32> -> vector<256xf32>
  // CHECK: %[[D:.*]] = qv.matrix_mma %[[A]], %[[B]], %[[C]] : vector<256xbf16>, vector<256xbf16>, vector<256xf32>
  %d = qv.matrix_mma %a, %b, %acc : vector<256xbf16>, vector<256xbf16>, vector<256xf32>
  // CHECK: qv.matrix_row_max %[[D]] : vector<256xf32>
  %m = qv.matrix_row_max %d : vector<256xf32>
  // CHECK: qv.matrix_row_sum %{{.*}} : vector<256xf32>
  %r = qv.matrix_row_sum %m : vector<256xf32>
  // CHECK: qv.matrix_to_a %{{.*}} : vector<256xf32> -> vector<256xf16>
  %h = qv.matrix_to_a %r : vector<256xf32> -> vector<256xf16>
  // CHECK: qv.matrix_store %[[D]], %{{.*}}[%{{.*}}], %{{.*}} : vector<256xf32>, memref<?xbf16>
  qv.matrix_store %d, %g[%i], %ld : vector<256xf32>, memref<?xbf16>
  // CHECK: qv.matrix_load a %{{.*}} -> vector<512xi8>
  %a8 = qv.matrix_load a %s8[%i], %ld : !s8 -> vector<512xi8>
  %b8 = qv.matrix_load bt %s8[%i], %ld : !s8 -> vector<512xi8>
  // CHECK: qv.matrix_load acc %{{.*}} : memref<?xi32> -> vector<256xi32>
  %c8 = qv.matrix_load acc %c32[%i], %ld : memref<?xi32> -> vector<256xi32>
  // CHECK: qv.matrix_mma %{{.*}} : vector<512xi8>, vector<512xi8>, vector<256xi32>
  %d8 = qv.matrix_mma %a8, %b8, %c8 : vector<512xi8>, vector<512xi8>, vector<256xi32>
  // CHECK: qv.matrix_store %{{.*}} : vector<256xi32>, memref<?xi32>
  qv.matrix_store %d8, %c32[%i], %ld : vector<256xi32>, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @retyped_tiles
func.func @retyped_tiles(%g: memref<?xf16>, %s8: !s8, %w: !words, %bits: memref<?xi16>, %c: memref<?xf32>, %i: index,
                         %ld: i32, %acc: vector<256xf32>, %lane_acc: vector<8xf32>, %lane_acc8: vector<8xi32>) {
  // Right operands of a cooperative-matrix image.
  // CHECK: qv.matrix_load b %{{.*}} : memref<?xf16> -> vector<16x16xf16>
  %b = qv.matrix_load b %g[%i], %ld : memref<?xf16> -> vector<16x16xf16>
  // CHECK: qv.matrix_load bt %{{.*}} -> vector<32x16xi8>
  %b8 = qv.matrix_load bt %s8[%i], %ld : !s8 -> vector<32x16xi8>
  %a = qv.matrix_load a %g[%i], %ld : memref<?xf16> -> vector<256xf16>
  // CHECK: qv.matrix_mma %{{.*}} : vector<256xf16>, vector<16x16xf16>, vector<256xf32>
  %d = qv.matrix_mma %a, %b, %acc : vector<256xf16>, vector<16x16xf16>, vector<256xf32>
  // A lane's fragments (PTX) and shares.
  // CHECK: qv.matrix_load a %{{.*}} -> vector<8xf16>
  %la = qv.matrix_load a %g[%i], %ld : memref<?xf16> -> vector<8xf16>
  %lb = qv.matrix_load b %g[%i], %ld : memref<?xf16> -> vector<8xf16>
  // CHECK: qv.matrix_mma %{{.*}} : vector<8xf16>, vector<8xf16>, vector<8xf32>
  %ld2 = qv.matrix_mma %la, %lb, %lane_acc : vector<8xf16>, vector<8xf16>, vector<8xf32>
  // CHECK: qv.matrix_mma %{{.*}} : vector<16xi8>, vector<16xi8>, vector<8xi32>
  %la8 = qv.matrix_load a %s8[%i], %ld : !s8 -> vector<16xi8>
  %ld8 = qv.matrix_mma %la8, %la8, %lane_acc8 : vector<16xi8>, vector<16xi8>, vector<8xi32>
  // CHECK: qv.matrix_row_max %{{.*}} : vector<8xf32>
  %m = qv.matrix_row_max %ld2 : vector<8xf32>
  // CHECK: qv.matrix_to_a %{{.*}} : vector<8xf32> -> vector<8xf16>
  %h = qv.matrix_to_a %m : vector<8xf32> -> vector<8xf16>
  // CHECK: qv.matrix_store %{{.*}} : vector<8xf32>, memref<?xf32>
  qv.matrix_store %m, %c[%i], %ld : vector<8xf32>, memref<?xf32>
  // Word arrays: offset and stride in words, the element type named.
  // CHECK: qv.matrix_load a %{{.*}} {word_element = f16} : memref<512xvector<4xi32>, #gpu.address_space<workgroup>> -> vector<256xf16>
  %wa = qv.matrix_load a %w[%i], %ld {word_element = f16} : !words -> vector<256xf16>
  // CHECK: qv.matrix_store %{{.*}} {word_element = f32} : vector<256xf32>, memref<512xvector<4xi32>, #gpu.address_space<workgroup>>
  qv.matrix_store %d, %w[%i], %ld {word_element = f32} : vector<256xf32>, !words
  // 16-bit floats as bits: i16 memory and tiles, a word array's element still the float.
  // CHECK: qv.matrix_load a %{{.*}} : memref<?xi16> -> vector<256xi16>
  %ba = qv.matrix_load a %bits[%i], %ld : memref<?xi16> -> vector<256xi16>
  // CHECK: qv.matrix_load b %{{.*}} {word_element = f16} : {{.*}} -> vector<16x16xi16>
  %bb = qv.matrix_load b %w[%i], %ld {word_element = f16} : !words -> vector<16x16xi16>
  // CHECK: qv.matrix_mma %{{.*}} : vector<256xi16>, vector<16x16xi16>, vector<256xf32>
  %bd = qv.matrix_mma %ba, %bb, %acc : vector<256xi16>, vector<16x16xi16>, vector<256xf32>
  // CHECK: qv.matrix_store %{{.*}} : vector<256xf32>, memref<?xi16>
  qv.matrix_store %bd, %bits[%i], %ld : vector<256xf32>, memref<?xi16>
  // CHECK: qv.subgroup_barrier
  qv.subgroup_barrier
  return
}

// CHECK-LABEL: func.func @block_tiles
func.func @block_tiles(%g: memref<?xf16>, %s8: !s8, %bits: memref<?xi16>, %c: memref<?xf32>, %c32: memref<?xi32>,
                       %i: index, %ld: i32, %acc: vector<64x128xf32>, %acc8: vector<32x32xi32>) {
  // CHECK: %[[D:.*]] = qv.block_mma k 64, %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} : memref<?xf16>, memref<?xf16>, vector<64x128xf32>
  %d = qv.block_mma k 64, %g[%i], %ld, %g[%i], %ld, %acc : memref<?xf16>, memref<?xf16>, vector<64x128xf32>
  // CHECK: qv.block_mma_bt k 32, {{.*}} : memref<8192xi8, #gpu.address_space<workgroup>>, memref<8192xi8, #gpu.address_space<workgroup>>, vector<32x32xi32>
  %d8 = qv.block_mma_bt k 32, %s8[%i], %ld, %s8[%i], %ld, %acc8 : !s8, !s8, vector<32x32xi32>
  // CHECK: qv.block_mma k 16, {{.*}} : memref<?xi16>, memref<?xi16>, vector<64x128xf32>
  %db = qv.block_mma k 16, %bits[%i], %ld, %bits[%i], %ld, %d : memref<?xi16>, memref<?xi16>, vector<64x128xf32>
  // CHECK: qv.block_store %[[D]], %{{.*}}[%{{.*}}], %{{.*}} : vector<64x128xf32>, memref<?xf16>
  qv.block_store %d, %g[%i], %ld : vector<64x128xf32>, memref<?xf16>
  // CHECK: qv.block_store %{{.*}} : vector<32x32xi32>, memref<?xi32>
  qv.block_store %d8, %c32[%i], %ld : vector<32x32xi32>, memref<?xi32>
  // CHECK: qv.block_load %{{.*}}[%{{.*}}], %{{.*}} : memref<?xf32> -> vector<64x128xf32>
  %l = qv.block_load %c[%i], %ld : memref<?xf32> -> vector<64x128xf32>
  qv.block_store %l, %bits[%i], %ld : vector<64x128xf32>, memref<?xi16>
  return
}
