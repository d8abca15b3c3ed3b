// RUN: %quiver-opt %s --pass-pipeline="builtin.module(gpu.module(qv-ptx-subgroups-to-shuffles))" | %FileCheck %s
// The subgroup size is the warp's 32 lanes; a subgroup reduction is a butterfly of shuffles.

gpu.module @kernels {
  // A block of whole warps: every lane's shuffle reads a thread of the block.
  // CHECK-LABEL: gpu.func @k
  gpu.func @k(%x: f32, %out: memref<2xf32>) kernel attributes {qv.block = array<i32: 256, 1, 1>} {
    // CHECK-NOT: gpu.subgroup_size
    // CHECK-NOT: gpu.subgroup_reduce
    // CHECK: %[[C32:.*]] = arith.constant 3.200000e+01 : f32
    // CHECK-NOT: arith.select
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

  // 48 threads: the second warp has 16 lanes. A shuffle from a lane past them takes the sum's
  // identity (0), for the maximum the lane's own value (upstream's butterflies read those lanes,
  // which are 0 on NVIDIA).
  // CHECK-LABEL: gpu.func @partial
  gpu.func @partial(%x: f32, %y: i32, %out: memref<1xf32>, %iout: memref<1xi32>) kernel
      attributes {qv.block = array<i32: 48, 1, 1>} {
    // CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
    // CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
    // CHECK-DAG: %[[W:.*]] = arith.constant 32 : index
    // CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %[[W]] : index
    // CHECK: %[[FIRST:.*]] = arith.subi %{{.*}}, %[[LANE]] : index
    // CHECK: %[[LEFT:.*]] = arith.subi %[[C48]], %[[FIRST]] : index
    // CHECK: %[[LANES:.*]] = arith.minui %[[LEFT]], %[[W]] : index
    // CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle xor %arg0
    // CHECK: %[[SRC1:.*]] = arith.xori %[[LANE]]
    // CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[SRC1]], %[[LANES]] : index
    // CHECK: %[[O1:.*]] = arith.select %[[IN1]], %[[S1]], %[[ZERO]] : f32
    // CHECK: arith.addf %arg0, %[[O1]] : f32
    // CHECK-COUNT-4: gpu.shuffle xor
    // CHECK: %[[M1:.*]], %{{.*}} = gpu.shuffle xor %arg1
    // CHECK: %[[IN2:.*]] = arith.cmpi ult
    // CHECK: %[[P1:.*]] = arith.select %[[IN2]], %[[M1]], %arg1 : i32
    // CHECK: arith.maxsi %arg1, %[[P1]] : i32
    // CHECK-NOT: gpu.subgroup_reduce
    %s = gpu.subgroup_reduce add %x : (f32) -> f32
    %m = gpu.subgroup_reduce maxsi %y : (i32) -> i32
    %c0 = arith.constant 0 : index
    memref.store %s, %out[%c0] : memref<1xf32>
    memref.store %m, %iout[%c0] : memref<1xi32>
    gpu.return
  }
}
