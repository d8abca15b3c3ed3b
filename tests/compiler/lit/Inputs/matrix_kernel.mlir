// One 16x16x16 f16 product on matrix tiles (a kernel of a warp), as the front end writes it.
module {
  func.func @mma(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf32>, %ld: i32)
      attributes {qv.block = array<i32: 32, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %ta = qv.matrix_load a %a[%c0], %ld : memref<?xf16> -> vector<256xf16>
    %tb = qv.matrix_load b %b[%c0], %ld : memref<?xf16> -> vector<256xf16>
    %tc = qv.matrix_load acc %c[%c0], %ld : memref<?xf32> -> vector<256xf32>
    %d = qv.matrix_mma %ta, %tb, %tc : vector<256xf16>, vector<256xf16>, vector<256xf32>
    qv.matrix_store %d, %c[%c0], %ld : vector<256xf32>, memref<?xf32>
    return
  }
}
