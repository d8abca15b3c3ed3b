// One 32x32 block tile accumulating a k16 bf16 product, stored, on a block of 128 threads.
module {
  func.func private @qv.block_mma.k16.g.bf16.g.bf16.32x32(vector<32x32xf32>, memref<?xbf16>, index, i32, memref<?xbf16>, index, i32) -> vector<32x32xf32>
  func.func private @qv.block_store.g.f32.32x32(memref<?xf32>, index, i32, vector<32x32xf32>)
  func.func @block(%a: memref<?xbf16>, %b: memref<?xbf16>, %c: memref<?xf32>, %ld: i32)
      attributes {qv.block = array<i32: 128, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant dense<0.0> : vector<32x32xf32>
    %d = call @qv.block_mma.k16.g.bf16.g.bf16.32x32(%zero, %a, %c0, %ld, %b, %c0, %ld) : (vector<32x32xf32>, memref<?xbf16>, index, i32, memref<?xbf16>, index, i32) -> vector<32x32xf32>
    call @qv.block_store.g.f32.32x32(%c, %c0, %ld, %d) : (memref<?xf32>, index, i32, vector<32x32xf32>) -> ()
    return
  }
}
