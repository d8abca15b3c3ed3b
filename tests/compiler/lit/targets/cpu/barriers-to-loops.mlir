// RUN: %quiver-opt %s --qv-cpu-barriers-to-loops | %FileCheck %s
// A block of a barrier kernel becomes loops over its threads split at each barrier; a value
// live across a barrier goes through a per-thread array; a barrier inside scf.for / scf.while
// puts the thread loops inside that loop; a barrier elsewhere leaves the kernel as it was.

// CHECK-LABEL: func.func @reverse
// CHECK-DAG: %[[SLOT:.*]] = memref.alloca() {qv.cpu.thread_slots} : memref<64xf32>
// CHECK-DAG: %[[SHARED:.*]] = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   %[[V:.*]] = memref.load %arg0[%[[T]]]
// CHECK:   memref.store %[[V]], %[[SLOT]][%[[T]]]
// CHECK:   memref.store %[[V]], %[[SHARED]][%[[T]]]
// CHECK: } {qv.cpu.thread_loop = "x"}
// CHECK-NOT: gpu.barrier
// The thread id is the loop's index again, not a stored copy.
// CHECK: scf.for %[[T2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   %[[R:.*]] = arith.subi %{{.*}}, %[[T2]]
// CHECK:   memref.load %[[SHARED]][%[[R]]]
// CHECK:   %[[OWN:.*]] = memref.load %[[SLOT]][%[[T2]]]
// CHECK:   arith.addf {{.*}}, %[[OWN]]
// CHECK:   memref.store {{.*}}, %arg1[%[[T2]]]
// CHECK: } {qv.cpu.thread_loop = "x"}
// CHECK-NOT: gpu.thread_id
// CHECK: return
func.func @reverse(%in: memref<?xf32>, %out: memref<?xf32>) attributes {qv.block = array<i32: 64, 1, 1>} {
  %shared = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
  %c63 = arith.constant 63 : index
  %t = gpu.thread_id x
  %v = memref.load %in[%t] : memref<?xf32>
  memref.store %v, %shared[%t] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %r = arith.subi %c63, %t : index
  %w = memref.load %shared[%r] : memref<64xf32, #gpu.address_space<workgroup>>
  %sum = arith.addf %w, %v : f32
  memref.store %sum, %out[%t] : memref<?xf32>
  return
}

// A 2-D block: loops y then x; the loop-carried sum lives in a per-thread array, the bound
// is uniform and stays outside the thread loops.
// CHECK-LABEL: func.func @tiles
// CHECK-DAG: %[[ACC:.*]] = memref.alloca() {qv.cpu.thread_slots} : memref<32xf32>
// CHECK-DAG: %[[SHARED:.*]] = memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for {{.*}} {
// CHECK:   scf.for {{.*}} {
// CHECK:     memref.store %{{.*}}, %[[ACC]]
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK: } {qv.cpu.thread_loop = "y"}
// CHECK: scf.for %{{.*}} = %{{.*}} to %arg1 step
// CHECK:   scf.for %{{.*}} {
// CHECK:     scf.for %{{.*}} {
// CHECK:       memref.load %[[ACC]]
// CHECK:       memref.store %{{.*}}, %[[SHARED]]
// CHECK:     } {qv.cpu.thread_loop = "x"}
// CHECK:   } {qv.cpu.thread_loop = "y"}
// CHECK:   scf.for %{{.*}} {
// CHECK:     scf.for %[[X:.*]] = {{.*}} {
// CHECK:       memref.load %[[SHARED]][%[[X]]]
// CHECK:     } {qv.cpu.thread_loop = "x"}
// CHECK:   } {qv.cpu.thread_loop = "y"}
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       memref.store %{{.*}}, %[[ACC]]
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     memref.load %[[ACC]]
// CHECK:     memref.store %{{.*}}, %arg2
// CHECK-NOT: gpu.barrier
// CHECK-NOT: gpu.thread_id
// CHECK: return
func.func @tiles(%in: memref<?xf32>, %n: index, %out: memref<?xf32>) attributes {qv.block = array<i32: 8, 4, 1>} {
  %shared = memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %x = gpu.thread_id x
  %y = gpu.thread_id y
  %yy = arith.muli %y, %c8 : index
  %t = arith.addi %yy, %x : index
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %zero) -> (f32) {
    %v = memref.load %in[%t] : memref<?xf32>
    memref.store %v, %shared[%t] : memref<32xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %shared[%x] : memref<32xf32, #gpu.address_space<workgroup>>
    %next = arith.addf %a, %w : f32
    gpu.barrier
    scf.yield %next : f32
  }
  memref.store %acc, %out[%t] : memref<?xf32>
  return
}

// The lifted form of a while loop with a barrier in its body: the condition a thread computes
// is read from thread 0's copy, once per trip.
// CHECK-LABEL: func.func @rounds
// CHECK: scf.while : () -> () {
// CHECK:   scf.for
// CHECK:   } {qv.cpu.thread_loop = "x"}
// CHECK:   %[[C:.*]] = memref.load %{{.*}}[%{{.*}}] {qv.cpu.after_threads}
// CHECK:   scf.if %[[C]] {
// CHECK:   %[[C2:.*]] = memref.load %{{.*}}[%{{.*}}] {qv.cpu.after_threads}
// CHECK:   scf.condition(%[[C2]])
// CHECK: } do {
// CHECK-NOT: gpu.barrier
// CHECK: return
func.func @rounds(%out: memref<?xi32>, %n: i32) attributes {qv.block = array<i32: 16, 1, 1>} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %poison = ub.poison : i32
  %t = gpu.thread_id x
  %r = scf.while (%i = %c0) : (i32) -> i32 {
    %more = arith.cmpi ult, %i, %n : i32
    %next = scf.if %more -> (i32) {
      memref.store %i, %out[%t] : memref<?xi32>
      gpu.barrier
      %j = arith.addi %i, %c1 : i32
      scf.yield %j : i32
    } else {
      scf.yield %poison : i32
    }
    scf.condition(%more) %next : i32
  } do {
  ^bb0(%i: i32):
    scf.yield %i : i32
  }
  return
}

// A barrier under scf.execute_region is not rewritten: the kernel keeps its fibers.
// CHECK-LABEL: func.func @unstructured
// CHECK: scf.execute_region
// CHECK: gpu.barrier
// CHECK-NOT: qv.cpu.thread_loop
func.func @unstructured(%out: memref<?xf32>) attributes {qv.block = array<i32: 4, 1, 1>} {
  %t = gpu.thread_id x
  %zero = arith.constant 0.0 : f32
  scf.execute_region {
    memref.store %zero, %out[%t] : memref<?xf32>
    gpu.barrier
    scf.yield
  }
  return
}

// A thread's local array live across a barrier: one row per thread of a block-sized array,
// every access indexed by the thread first.
// CHECK-LABEL: func.func @local_array
// CHECK: %[[ROWS:.*]] = memref.alloca() {alignment = 16 : i64, qv.cpu.thread_slots} : memref<8x4xf32>
// CHECK: scf.for %[[T:.*]] = {{.*}} {
// CHECK:   memref.store %{{.*}}, %[[ROWS]][%[[T]], %{{.*}}] : memref<8x4xf32>
// CHECK: } {qv.cpu.thread_loop = "x"}
// CHECK: scf.for %[[T2:.*]] = {{.*}} {
// CHECK:   vector.load %[[ROWS]][%[[T2]], %{{.*}}] : memref<8x4xf32>, vector<4xf32>
// CHECK: } {qv.cpu.thread_loop = "x"}
func.func @local_array(%out: memref<?xf32>) attributes {qv.block = array<i32: 8, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %local = memref.alloca() {alignment = 16 : i64} : memref<4xf32>
  %t = gpu.thread_id x
  %f = arith.index_cast %t : index to i32
  %v = arith.sitofp %f : i32 to f32
  memref.store %v, %local[%c0] : memref<4xf32>
  gpu.barrier
  %w = vector.load %local[%c0] : memref<4xf32>, vector<4xf32>
  %at = arith.muli %t, %c4 : index
  vector.store %w, %out[%at] : memref<?xf32>, vector<4xf32>
  return
}
