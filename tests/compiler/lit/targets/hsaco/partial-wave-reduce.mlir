// RUN: %quiver-opt %s --qv-hsaco-outline-kernels="kernels=reduce48 wave-size=32" | %FileCheck %s
// RUN: %quiver-opt %s --qv-hsaco-outline-kernels="kernels=reduce48" | %FileCheck %s --check-prefix=WAVE64
// A block of 48 threads: its last wave is partly filled (16 of 32 lanes; at 64 lanes, the only
// wave has 48). Each butterfly step takes the sum's identity where the partner lane is past the
// block (docs/ir.md "Subgroups of a partly filled block"), the lanes the wave has from the
// block size: 48 - the wave's first thread, at most the wave size.

// CHECK-LABEL: gpu.func @reduce48
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
// CHECK: %[[LEFT:.*]] = arith.subi %[[C48]], %{{.*}} : index
// CHECK: %[[LANES:.*]] = arith.minui %[[LEFT]], %{{.*}} : index
// CHECK-COUNT-5: arith.select %{{.*}}, %{{.*}}, %[[ZERO]] : f32
// CHECK-NOT: gpu.subgroup_reduce

// WAVE64-LABEL: gpu.func @reduce48
// WAVE64-COUNT-6: arith.select
// WAVE64-NOT: gpu.subgroup_reduce
module {
  func.func @reduce48(%y: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 48, 1, 1>} {
    %t = gpu.thread_id x
    %v = memref.load %y[%t] : memref<?xf32>
    %r = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %r, %y[%t] : memref<?xf32>
    return
  }
}
