// One warpgroup product (64 x 32 from shared panels), waited for and stored, on 128 threads.
module {
  func.func private @qv.warpgroup_mma.s8192.f16.s2048.f16.n32(memref<8192xf16, #gpu.address_space<workgroup>>, index, memref<2048xf16, #gpu.address_space<workgroup>>, index, i32, vector<16xf32>) -> vector<16xf32>
  func.func private @qv.warpgroup_commit()
  func.func private @qv.warpgroup_wait(i32)
  func.func private @qv.warpgroup_store.g.f32.n32(memref<?xf32>, index, i32, vector<16xf32>)
  func.func @warpgroup(%c: memref<?xf32>) attributes {qv.block = array<i32: 128, 1, 1>, qv.kernel} {
    %c0 = arith.constant 0 : index
    %c0_i32 = arith.constant 0 : i32
    %c32_i32 = arith.constant 32 : i32
    %c1024_i32 = arith.constant 1024 : i32
    %zero = arith.constant dense<0.0> : vector<16xf32>
    %a = memref.alloca() {alignment = 1024 : i64} : memref<8192xf16, #gpu.address_space<workgroup>>
    %b = memref.alloca() {alignment = 1024 : i64} : memref<2048xf16, #gpu.address_space<workgroup>>
    %d = call @qv.warpgroup_mma.s8192.f16.s2048.f16.n32(%a, %c0, %b, %c0, %c1024_i32, %zero) : (memref<8192xf16, #gpu.address_space<workgroup>>, index, memref<2048xf16, #gpu.address_space<workgroup>>, index, i32, vector<16xf32>) -> vector<16xf32>
    call @qv.warpgroup_commit() : () -> ()
    call @qv.warpgroup_wait(%c0_i32) : (i32) -> ()
    call @qv.warpgroup_store.g.f32.n32(%c, %c0, %c32_i32, %d) : (memref<?xf32>, index, i32, vector<16xf32>) -> ()
    return
  }
}
