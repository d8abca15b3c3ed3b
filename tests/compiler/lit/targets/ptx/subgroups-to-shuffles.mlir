// RUN: %quiver-opt %s --pass-pipeline="builtin.module(gpu.module(qv-ptx-subgroups-to-shuffles))" | %FileCheck %s
// The subgroup size is the warp's 32 lanes; a subgroup reduction is a butterfly of shuffles.

gpu.module @kernels {
  // CHECK-LABEL: gpu.func @k
  gpu.func @k(%x: f32, %out: memref<2xf32>) kernel {
    // CHECK-NOT: gpu.subgroup_size
    // CHECK-NOT: gpu.subgroup_reduce
    // CHECK: %[[C32:.*]] = arith.constant 3.200000e+01 : f32
    // CHECK-COUNT-5: gpu.shuffle xor
    // CHECK-NOT: gpu.shuffle
    // CHECK: memref.store
    // CHECK: memref.store %[[C32]]
    %n = gpu.subgroup_size : index
    %s = gpu.subgroup_reduce add %x : (f32) -> f32
    %c0 = arith.constant 0 : index
    memref.store %s, %out[%c0] : memref<2xf32>
    %nf = arith.index_cast %n : index to i32
    %f = arith.sitofp %nf : i32 to f32
    %c1 = arith.constant 1 : index
    memref.store %f, %out[%c1] : memref<2xf32>
    gpu.return
  }
}
