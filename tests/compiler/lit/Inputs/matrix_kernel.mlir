// One 16x16x16 f16 product on matrix tiles (a kernel of a warp), as the front end writes it.
module {
  func.func private @qv.matrix_load_a.g.f16(memref<?xf16>, index, i32) -> vector<256xf16>
  func.func private @qv.matrix_load_b.g.f16(memref<?xf16>, index, i32) -> vector<256xf16>
  func.func private @qv.matrix_load_acc.g.f32(memref<?xf32>, index, i32) -> vector<256xf32>
  func.func private @qv.matrix_mma.f16(vector<256xf16>, vector<256xf16>, vector<256xf32>) -> vector<256xf32>
  func.func private @qv.matrix_store.g.f32(memref<?xf32>, index, i32, vector<256xf32>)
  func.func @mma(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf32>, %ld: i32)
      attributes {qv.block = array<i32: 32, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %ta = call @qv.matrix_load_a.g.f16(%a, %c0, %ld) : (memref<?xf16>, index, i32) -> vector<256xf16>
    %tb = call @qv.matrix_load_b.g.f16(%b, %c0, %ld) : (memref<?xf16>, index, i32) -> vector<256xf16>
    %tc = call @qv.matrix_load_acc.g.f32(%c, %c0, %ld) : (memref<?xf32>, index, i32) -> vector<256xf32>
    %d = call @qv.matrix_mma.f16(%ta, %tb, %tc) : (vector<256xf16>, vector<256xf16>, vector<256xf32>) -> vector<256xf32>
    call @qv.matrix_store.g.f32(%c, %c0, %ld, %d) : (memref<?xf32>, index, i32, vector<256xf32>) -> ()
    return
  }
}
