// RUN: %quiver-opt %s --qv-cpu-subgroups-to-lanes | %FileCheck %s
// A kernel's subgroups become lanes of its thread loops: a loop over the block's subgroups of
// gpu.subgroup_size threads around loops over the lanes, split at each subgroup operation. A
// reduction is one loop over the lanes' values run once per subgroup after the lane loop that
// stored them; a shuffle is each lane's load of its source lane's value, its own where the
// source is past the subgroup.

// CHECK-LABEL: func.func @sum_and_rotate
// CHECK: %[[W:.*]] = gpu.subgroup_size : index
// CHECK: %[[GROUPS:.*]] = arith.divui %{{.*}}, %[[W]] : index
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %[[GROUPS]] step
// CHECK:   %[[FIRST:.*]] = arith.muli %[[G]], %[[W]] : index
// CHECK:   scf.for %[[L:.*]] = %{{.*}} to %[[W]] step
// CHECK:     %[[T:.*]] = arith.addi %[[FIRST]], %[[L]] : index
// CHECK:     %[[V:.*]] = memref.load %arg0[%[[T]]]
// The value is kept per lane for the shuffle, and published for the reduction.
// CHECK:     memref.store %[[V]], %{{.*}}[%[[L]]]
// CHECK:     memref.store %[[V]], %[[SUMS:.*]][%[[L]]]
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK:   %[[S0:.*]] = memref.load %[[SUMS]][%{{.*}}] {qv.cpu.after_threads}
// CHECK:   %[[SUM:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[W]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[S0]]) -> (f32) {
// CHECK:     %[[E:.*]] = memref.load %[[SUMS]][%[[I]]]
// CHECK:     %[[ADD:.*]] = arith.addf %[[ACC]], %[[E]] : f32
// CHECK:     scf.yield %[[ADD]]
// CHECK:   } {qv.cpu.after_threads}
// CHECK:   scf.for %[[L2:.*]] = %{{.*}} to %[[W]] step
// CHECK:     memref.store %[[SUM]], %arg1[
// CHECK:     memref.store %{{.*}}, %[[SHUF:.*]][%[[L2]]]
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK:   scf.for %[[L3:.*]] = %{{.*}} to %[[W]] step
// CHECK:     %[[OWN:.*]] = arith.index_castui %[[L3]] : index to i32
// CHECK:     %[[VALID:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK:     %[[FROM:.*]] = arith.select %[[VALID]], %{{.*}}, %[[OWN]] : i32
// CHECK:     %[[IDX:.*]] = arith.index_castui %[[FROM]] : i32 to index
// CHECK:     %[[R:.*]] = memref.load %[[SHUF]][%[[IDX]]]
// CHECK:     memref.store %[[R]], %arg2[
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK: } {qv.cpu.subgroup_loop}
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.lane_id
// CHECK-NOT: gpu.thread_id
func.func @sum_and_rotate(%in: memref<?xf32>, %out: memref<?xf32>, %rot: memref<?xf32>) attributes {qv.block = array<i32: 64, 1, 1>} {
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<?xf32>
  %s = gpu.subgroup_reduce add %v : (f32) -> f32
  memref.store %s, %out[%t] : memref<?xf32>
  %lane = gpu.lane_id
  %size = gpu.subgroup_size : index
  %c1 = arith.constant 1 : index
  %next = arith.addi %lane, %c1 : index
  %src = arith.remui %next, %size : index
  %src32 = arith.index_castui %src : index to i32
  %size32 = arith.index_castui %size : index to i32
  %r, %valid = gpu.shuffle idx %v, %src32, %size32 : f32
  memref.store %r, %rot[%t] : memref<?xf32>
  return
}

// A 2-D block: a subgroup is consecutive linear ids, x fastest; the reduction of integers
// takes the signed maximum.
// CHECK-LABEL: func.func @rows
// CHECK: scf.for %[[G:.*]] =
// CHECK:   scf.for %[[L:.*]] =
// CHECK:     %[[T:.*]] = arith.addi %{{.*}}, %[[L]] : index
// CHECK:     arith.remui %[[T]], %{{.*}} : index
// CHECK:     arith.divui %[[T]], %{{.*}} : index
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK:   scf.for {{.*}} iter_args
// CHECK:     arith.maxsi
// CHECK:   } {qv.cpu.after_threads}
// CHECK: } {qv.cpu.subgroup_loop}
func.func @rows(%in: memref<?xi32>, %out: memref<?xi32>) attributes {qv.block = array<i32: 16, 4, 1>} {
  %x = gpu.thread_id x
  %y = gpu.thread_id y
  %c16 = arith.constant 16 : index
  %row = arith.muli %y, %c16 : index
  %i = arith.addi %row, %x : index
  %v = memref.load %in[%i] : memref<?xi32>
  %m = gpu.subgroup_reduce maxsi %v : (i32) -> i32
  memref.store %m, %out[%i] : memref<?xi32>
  return
}

// A kernel with a barrier is left to qv-cpu-barriers-to-loops.
// CHECK-LABEL: func.func @with_barrier
// CHECK: gpu.subgroup_reduce
// CHECK: gpu.barrier
func.func @with_barrier(%in: memref<?xf32>) attributes {qv.block = array<i32: 32, 1, 1>} {
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<?xf32>
  %s = gpu.subgroup_reduce add %v : (f32) -> f32
  gpu.barrier
  memref.store %s, %in[%t] : memref<?xf32>
  return
}
