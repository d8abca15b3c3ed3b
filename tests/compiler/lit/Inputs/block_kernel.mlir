// One 32x32 block tile accumulating a k16 bf16 product, stored, on a block of 128 threads.
module {
  func.func @block(%a: memref<?xbf16>, %b: memref<?xbf16>, %c: memref<?xf32>, %ld: i32)
      attributes {qv.block = array<i32: 128, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.0> : vector<32x32xf32>
    %d = qv.block_mma k 16, %a[%c0], %ld, %b[%c0], %ld, %zero : memref<?xbf16>, memref<?xbf16>, vector<32x32xf32>
    qv.block_store %d, %c[%c0], %ld : vector<32x32xf32>, memref<?xf32>
    return
  }
}
