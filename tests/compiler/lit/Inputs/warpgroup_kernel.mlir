// One warpgroup product (64 x 32 from shared panels), waited for and stored, on 128 threads.
module {
  func.func @warpgroup(%c: memref<?xf32>) attributes {qv.block = array<i32: 128, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %c32_i32 = arith.constant 32 : i32
    %c1024_i32 = arith.constant 1024 : i32
    %zero = arith.constant dense<0.0> : vector<16xf32>
    %a = memref.alloca() {alignment = 1024 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>
    %b = memref.alloca() {alignment = 1024 : i64} : memref<2048xf16, #gpu.address_space<workgroup>>
    %d = qv.warpgroup_mma %a[%c0], %b[%c0], %c1024_i32, %zero : memref<8192xf16, #gpu.address_space<workgroup>>, memref<2048xf16, #gpu.address_space<workgroup>>, vector<16xf32>
    qv.warpgroup_commit
    qv.warpgroup_wait 0
    qv.warpgroup_store %d, %c[%c0], %c32_i32 : vector<16xf32>, memref<?xf32>
    return
  }
}
