// qv::wait_prior_launches between a load of a table and a load of the previous launch's output.
module {
  func.func @step(%table: memref<?xf32>, %in: memref<?xf32>, %out: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %t = memref.load %table[%c0] : memref<?xf32>
    qv.wait_prior_launches
    %x = memref.load %in[%c0] : memref<?xf32>
    %y = arith.addf %x, %t : f32
    memref.store %y, %out[%c0] : memref<?xf32>
    return
  }
}
