// RUN: %quiver-opt %s -split-input-file -verify-diagnostics
// The verifiers of the matrix- and block-tile operations: each rejects what no stage between
// the front end and a target's lowering makes, with a message naming what is wrong.

func.func @tile_length(%g: memref<?xf16>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op tile 'vector<128xf16>' is not a tile: 'vector<256xf16>' or a lane's 'vector<8xf16>'}}
  %a = qv.matrix_load a %g[%i], %s : memref<?xf16> -> vector<128xf16>
  return
}

// -----

func.func @left_operand_as_right(%g: memref<?xf16>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op tile 'vector<16x16xf16>' is not a tile: 'vector<256xf16>' or a lane's 'vector<8xf16>'}}
  %a = qv.matrix_load a %g[%i], %s : memref<?xf16> -> vector<16x16xf16>
  return
}

// -----

func.func @right_operand_shape(%g: memref<?xi8>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op tile 'vector<16x16xi8>' is not a tile: 'vector<512xi8>', 'vector<32x16xi8>' or a lane's 'vector<16xi8>'}}
  %b = qv.matrix_load b %g[%i], %s : memref<?xi8> -> vector<16x16xi8>
  return
}

// -----

func.func @float_operand(%g: memref<?xf32>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op tile 'vector<256xf32>' must have f16, bf16 (or i16 bits) or i8 elements}}
  %a = qv.matrix_load bt %g[%i], %s : memref<?xf32> -> vector<256xf32>
  return
}

// -----

func.func @memory_type(%g: memref<?xf16>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op reads a tile of 'f32' from memory of 'f16'}}
  %c = qv.matrix_load acc %g[%i], %s : memref<?xf16> -> vector<256xf32>
  return
}

// -----

!words = memref<512xvector<4xi32>, #gpu.address_space<workgroup>>
func.func @words_unnamed(%w: !words, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.matrix_load' op on a word array 'memref<512xvector<4xi32>, #gpu.address_space<workgroup>>' needs word_element, the type of the tile's elements}}
  %a = qv.matrix_load a %w[%i], %s : !words -> vector<256xf16>
  return
}

// -----

func.func @word_element_elsewhere(%c: memref<?xf32>, %i: index, %s: i32, %t: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_store' op word_element is only for a workgroup array of vector<4xi32>, not 'memref<?xf32>'}}
  qv.matrix_store %t, %c[%i], %s {word_element = f32} : vector<256xf32>, memref<?xf32>
  return
}

// -----

func.func @float_store_to_int(%c: memref<?xi32>, %i: index, %s: i32, %t: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_store' op stores an 'f32' accumulator to f32, f16 or bf16 memory, not 'i32'}}
  qv.matrix_store %t, %c[%i], %s : vector<256xf32>, memref<?xi32>
  return
}

// -----

func.func @int_store_to_float(%c: memref<?xf32>, %i: index, %s: i32, %t: vector<256xi32>) {
  // expected-error @+1 {{'qv.matrix_store' op stores an 'i32' accumulator to i32 memory, not 'f32'}}
  qv.matrix_store %t, %c[%i], %s : vector<256xi32>, memref<?xf32>
  return
}

// -----

func.func @store_operand(%c: memref<?xf16>, %i: index, %s: i32, %t: vector<256xf16>) {
  // expected-error @+1 {{'qv.matrix_store' op accumulator 'vector<256xf16>' must have f32 or i32 elements}}
  qv.matrix_store %t, %c[%i], %s : vector<256xf16>, memref<?xf16>
  return
}

// -----

func.func @mixed_operands(%a: vector<256xf16>, %b: vector<256xbf16>, %c: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_mma' op A and B must have the same element type, not 'f16' and 'bf16'}}
  %d = qv.matrix_mma %a, %b, %c : vector<256xf16>, vector<256xbf16>, vector<256xf32>
  return
}

// -----

func.func @int8_float_acc(%a: vector<512xi8>, %c: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_mma' op 'i8' operands take an i32 accumulator, not 'f32'}}
  %d = qv.matrix_mma %a, %a, %c : vector<512xi8>, vector<512xi8>, vector<256xf32>
  return
}

// -----

func.func @half_int_acc(%a: vector<256xf16>, %c: vector<256xi32>) {
  // expected-error @+1 {{'qv.matrix_mma' op 'f16' operands take an f32 accumulator, not 'i32'}}
  %d = qv.matrix_mma %a, %a, %c : vector<256xf16>, vector<256xf16>, vector<256xi32>
  return
}

// -----

func.func @lanes_and_tiles(%a: vector<8xf16>, %b: vector<256xf16>, %c: vector<8xf32>) {
  // expected-error @+1 {{'qv.matrix_mma' op mixes whole tiles and lanes' fragments}}
  %d = qv.matrix_mma %a, %b, %c : vector<8xf16>, vector<256xf16>, vector<8xf32>
  return
}

// -----

func.func @mma_result(%a: vector<256xf16>, %c: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_mma' op failed to verify that all of {acc, result} have same type}}
  %d = "qv.matrix_mma"(%a, %a, %c) : (vector<256xf16>, vector<256xf16>, vector<256xf32>) -> vector<8xf32>
  return
}

// -----

func.func @row_max_int(%c: vector<256xi32>) {
  // expected-error @+1 {{'qv.matrix_row_max' op takes a float accumulator, not 'vector<256xi32>'}}
  %m = qv.matrix_row_max %c : vector<256xi32>
  return
}

// -----

func.func @row_sum_length(%c: vector<64xf32>) {
  // expected-error @+1 {{'qv.matrix_row_sum' op accumulator 'vector<64xf32>' is not a tile: 'vector<256xf32>' or a lane's 'vector<8xf32>'}}
  %m = qv.matrix_row_sum %c : vector<64xf32>
  return
}

// -----

func.func @to_int8(%c: vector<256xf32>) {
  // expected-error @+1 {{'qv.matrix_to_a' op makes an f16 or bf16 tile, not 'vector<512xi8>'}}
  %a = qv.matrix_to_a %c : vector<256xf32> -> vector<512xi8>
  return
}

// -----

func.func @to_a_length(%c: vector<8xf32>) {
  // expected-error @+1 {{'qv.matrix_to_a' op result 'vector<256xbf16>' does not hold the elements of 'vector<8xf32>'}}
  %a = qv.matrix_to_a %c : vector<8xf32> -> vector<256xbf16>
  return
}

// -----

func.func @block_depth(%g: memref<?xf16>, %i: index, %s: i32, %c: vector<64x64xf32>) {
  // expected-error @+1 {{'qv.block_mma' op K must be a multiple of 16, not 24}}
  %d = qv.block_mma k 24, %g[%i], %s, %g[%i], %s, %c : memref<?xf16>, memref<?xf16>, vector<64x64xf32>
  return
}

// -----

func.func @block_depth_int8(%g: memref<?xi8>, %i: index, %s: i32, %c: vector<64x64xi32>) {
  // expected-error @+1 {{'qv.block_mma_bt' op K of i8 operands must be a multiple of 32, not 48}}
  %d = qv.block_mma_bt k 48, %g[%i], %s, %g[%i], %s, %c : memref<?xi8>, memref<?xi8>, vector<64x64xi32>
  return
}

// -----

func.func @block_depth_range(%g: memref<?xf16>, %i: index, %s: i32, %c: vector<64x64xf32>) {
  // expected-error @+1 {{'qv.block_mma' op attribute 'k' failed to satisfy constraint}}
  %d = qv.block_mma k 2048, %g[%i], %s, %g[%i], %s, %c : memref<?xf16>, memref<?xf16>, vector<64x64xf32>
  return
}

// -----

func.func @block_acc_rank(%g: memref<?xf16>, %i: index, %s: i32, %c: vector<64xf32>) {
  // expected-error @+1 {{'qv.block_mma' op block accumulator 'vector<64xf32>' is not vector<M x N x f32> or vector<M x N x i32>}}
  %d = qv.block_mma k 16, %g[%i], %s, %g[%i], %s, %c : memref<?xf16>, memref<?xf16>, vector<64xf32>
  return
}

// -----

func.func @block_float_operands(%g: memref<?xf32>, %i: index, %s: i32, %c: vector<64x64xf32>) {
  // expected-error @+1 {{'qv.block_mma' op operands must be f16, bf16 or i8, not 'f32'}}
  %d = qv.block_mma k 16, %g[%i], %s, %g[%i], %s, %c : memref<?xf32>, memref<?xf32>, vector<64x64xf32>
  return
}

// -----

func.func @block_mixed(%g: memref<?xf16>, %h: memref<?xbf16>, %i: index, %s: i32, %c: vector<64x64xf32>) {
  // expected-error @+1 {{'qv.block_mma' op A and B must have the same element type, not 'f16' and 'bf16'}}
  %d = qv.block_mma k 16, %g[%i], %s, %h[%i], %s, %c : memref<?xf16>, memref<?xbf16>, vector<64x64xf32>
  return
}

// -----

func.func @block_half_int_acc(%g: memref<?xbf16>, %i: index, %s: i32, %c: vector<64x64xi32>) {
  // expected-error @+1 {{'qv.block_mma' op 'bf16' operands take an f32 accumulator, not 'i32'}}
  %d = qv.block_mma k 16, %g[%i], %s, %g[%i], %s, %c : memref<?xbf16>, memref<?xbf16>, vector<64x64xi32>
  return
}

// -----

func.func @block_store_int(%g: memref<?xi8>, %i: index, %s: i32, %c: vector<64x64xf32>) {
  // expected-error @+1 {{'qv.block_store' op stores an 'f32' accumulator to f32, f16 or bf16 memory, not 'i8'}}
  qv.block_store %c, %g[%i], %s : vector<64x64xf32>, memref<?xi8>
  return
}

// -----

func.func @block_load_half(%g: memref<?xf16>, %i: index, %s: i32) {
  // expected-error @+1 {{'qv.block_load' op reads an 'f32' accumulator from memory of 'f16'}}
  %c = qv.block_load %g[%i], %s : memref<?xf16> -> vector<64x64xf32>
  return
}
