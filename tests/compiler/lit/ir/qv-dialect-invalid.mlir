// RUN: %quiver-opt %s -split-input-file -verify-diagnostics
// The qv dialect's verifiers: each operation rejects the combinations docs/matrix.md does not
// allow, with a message naming what is wrong.

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
func.func @share_length(%a: !sa, %i: index, %s: i32, %c: vector<12xf32>) -> vector<12xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma' op accumulator share 'vector<12xf32>' is not vector<N/2> for N = 16 .. 256 in steps of 16}}
  %d = qv.warpgroup_mma %a[%i], %a[%i], %s, %c : !sa, !sa, vector<12xf32>
  return %d : vector<12xf32>
}

// -----

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
func.func @share_too_long(%a: !sa, %i: index, %c: vector<136xf32>) -> vector<136xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma_bt' op accumulator share 'vector<136xf32>' is not vector<N/2>}}
  %d = qv.warpgroup_mma_bt %a[%i], %a[%i], %c : !sa, !sa, vector<136xf32>
  return %d : vector<136xf32>
}

// -----

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
func.func @operand_not_shared(%a: !sa, %g: memref<?xf16>, %i: index, %s: i32, %c: vector<16xf32>) -> vector<16xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma' op B must be in workgroup memory, not 'memref<?xf16>'}}
  %d = qv.warpgroup_mma %a[%i], %g[%i], %s, %c : !sa, memref<?xf16>, vector<16xf32>
  return %d : vector<16xf32>
}

// -----

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
!sb = memref<8192xbf16, #gpu.address_space<workgroup>>
func.func @mixed_operands(%a: !sa, %b: !sb, %i: index, %c: vector<16xf32>) -> vector<16xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma_bt' op A and B must have the same element type, not 'f16' and 'bf16'}}
  %d = qv.warpgroup_mma_bt %a[%i], %b[%i], %c : !sa, !sb, vector<16xf32>
  return %d : vector<16xf32>
}

// -----

!s8 = memref<16384xi8, #gpu.address_space<workgroup>>
func.func @int8_mn_major(%a: !s8, %i: index, %s: i32, %c: vector<16xi32>) -> vector<16xi32> {
  // expected-error @+1 {{'qv.warpgroup_mma' op i8 operands read B K-major only: use qv.warpgroup_mma_bt}}
  %d = qv.warpgroup_mma %a[%i], %a[%i], %s, %c : !s8, !s8, vector<16xi32>
  return %d : vector<16xi32>
}

// -----

!s8 = memref<16384xi8, #gpu.address_space<workgroup>>
func.func @int8_float_acc(%a: !s8, %i: index, %c: vector<16xf32>) -> vector<16xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma_bt' op i8 operands take an i32 accumulator, not 'f32'}}
  %d = qv.warpgroup_mma_bt %a[%i], %a[%i], %c : !s8, !s8, vector<16xf32>
  return %d : vector<16xf32>
}

// -----

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
func.func @half_int_acc(%a: !sa, %i: index, %c: vector<16xi32>) -> vector<16xi32> {
  // expected-error @+1 {{'qv.warpgroup_mma_bt' op 'f16' operands take an f32 accumulator, not 'i32'}}
  %d = qv.warpgroup_mma_bt %a[%i], %a[%i], %c : !sa, !sa, vector<16xi32>
  return %d : vector<16xi32>
}

// -----

!sf = memref<4096xf32, #gpu.address_space<workgroup>>
func.func @float_operands(%a: !sf, %i: index, %s: i32, %c: vector<16xf32>) -> vector<16xf32> {
  // expected-error @+1 {{'qv.warpgroup_mma' op operands must be f16, bf16, not 'f32'}}
  %d = qv.warpgroup_mma %a[%i], %a[%i], %s, %c : !sf, !sf, vector<16xf32>
  return %d : vector<16xf32>
}

// -----

!sa = memref<8192xf16, #gpu.address_space<workgroup>>
func.func @result_type(%a: !sa, %i: index, %c: vector<16xf32>) {
  // expected-error @+1 {{'qv.warpgroup_mma_bt' op failed to verify that all of {acc, result} have same type}}
  %d = "qv.warpgroup_mma_bt"(%a, %i, %a, %i, %c) : (!sa, index, !sa, index, vector<16xf32>) -> vector<32xf32>
  return
}

// -----

func.func @wait_range() {
  // expected-error @+1 {{'qv.warpgroup_wait' op attribute 'pending' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 7}}
  qv.warpgroup_wait 8
  return
}

// -----

func.func @store_int_to_float(%p: memref<?xf32>, %i: index, %s: i32, %c: vector<16xi32>) {
  // expected-error @+1 {{'qv.warpgroup_store' op an i32 accumulator is stored to i32 memory, not 'f32'}}
  qv.warpgroup_store %c, %p[%i], %s : vector<16xi32>, memref<?xf32>
  return
}

// -----

func.func @store_float_to_int(%p: memref<?xi32>, %i: index, %s: i32, %c: vector<16xf32>) {
  // expected-error @+1 {{'qv.warpgroup_store' op stores a float accumulator to f32, f16 or bf16 memory, not 'i32'}}
  qv.warpgroup_store %c, %p[%i], %s : vector<16xf32>, memref<?xi32>
  return
}

// -----

func.func @bounded_int(%p: memref<?xi32>, %i: index, %s: i32, %c: vector<16xi32>) {
  // expected-error @+1 {{'qv.warpgroup_store_bounded' op takes a float accumulator, not 'vector<16xi32>'}}
  qv.warpgroup_store_bounded %c, %p[%i], %s, bounds %s, %s : vector<16xi32>, memref<?xi32>
  return
}

// -----

func.func @swizzled_to_f32(%p: memref<?xf32>, %i: index, %s: i32, %c: vector<16xf32>) {
  // expected-error @+1 {{'qv.warpgroup_store_swizzled' op stores a float accumulator to f16 or bf16 memory, not 'f32'}}
  qv.warpgroup_store_swizzled %c, %p[%i], %s : vector<16xf32>, memref<?xf32>
  return
}

// -----

func.func @swizzled_share(%p: memref<?xf16>, %i: index, %s: i32, %c: vector<4xf32>) {
  // expected-error @+1 {{'qv.warpgroup_store_swizzled' op accumulator share 'vector<4xf32>' is not vector<N/2>}}
  qv.warpgroup_store_swizzled %c, %p[%i], %s : vector<4xf32>, memref<?xf16>
  return
}

// -----

func.func @copy_wait_range() {
  // expected-error @+1 {{'qv.copy_async_wait' op attribute 'pending' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 7}}
  qv.copy_async_wait -1
  return
}

// -----

func.func @dot4_wide(%a: i64, %b: i32) -> i32 {
  // expected-error @+1 {{'qv.dot4_i8' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  %d = "qv.dot4_i8"(%a, %b, %b) : (i64, i32, i32) -> i32
  return %d : i32
}
