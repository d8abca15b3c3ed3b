// qv::copy_async of 16 bytes from a buffer into a workgroup array, committed and waited for.
module {
  func.func @copy(%src: memref<?xf32>, %dst: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %tile = memref.alloca() : memref<128xf32, #gpu.address_space<workgroup>>
    %v = vector.load %src[%c0] {qv.copy_async} : memref<?xf32>, vector<4xf32>
    vector.store %v, %tile[%c0] {qv.copy_async} : memref<128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    qv.copy_async_commit
    qv.copy_async_wait 1
    %w = vector.load %tile[%c0] : memref<128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    vector.store %w, %dst[%c0] : memref<?xf32>, vector<4xf32>
    return
  }
}
