// RUN: %quiver-opt %s --qv-cpu-thread-functions=kernels=ids,swap | %FileCheck %s --implicit-check-not=gpu.
// RUN: ! %quiver-opt %s --qv-cpu-thread-functions=kernels=missing 2>&1 | %FileCheck %s --check-prefix=MISSING
// Each kernel becomes its per-thread function: its parameters, then the shared memory bytes, the
// qv_cpu_ctx pointer and ten ids (thread_id, block_id, grid_dim xyz, the subgroup size); the
// workgroup arrays are views of the shared bytes, the block size a constant. A kernel whose
// barrier sits in structured control flow runs its block as loops over the threads, split at
// the barrier (qv.cpu.block_loops tells the driver to export it as one call per block).

// CHECK-LABEL: func.func @__qv_thread_ids(
// CHECK-SAME: %arg0: memref<?xf32>, %arg1: memref<?xi8>, %arg2: !llvm.ptr, %arg3: index, %arg4: index,
// CHECK-SAME: %arg5: index, %arg6: index, %arg7: index, %arg8: index, %arg9: index, %arg10: index,
// CHECK-SAME: %arg11: index, %arg12: index)
// CHECK-NOT: qv.cpu.block_loops
// CHECK: %[[VIEW:.*]] = memref.view %arg1[%{{.*}}][] : memref<?xi8> to memref<64xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: arith.muli %arg6, %[[C64]]
// CHECK: arith.addi %arg10, %arg12
// CHECK: memref.store %{{.*}}, %[[VIEW]][%arg3]

// CHECK-LABEL: func.func @__qv_thread_swap(
// CHECK-SAME: qv.cpu.block_loops
// CHECK: scf.for %[[T0:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[T0]]] : memref<32xf32>
// CHECK: } {qv.cpu.thread_loop = "x"}
// CHECK: scf.for
// CHECK: } {qv.cpu.thread_loop = "x"}
// CHECK-NEXT: return

// MISSING: no kernel 'missing' (func.func with qv.kernel and a body) in the module
module {
  func.func @ids(%y: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %t = gpu.thread_id x
    %b = gpu.block_id x
    %n = gpu.block_dim x
    %g = gpu.grid_dim y
    %s = gpu.subgroup_size : index
    %i0 = arith.muli %b, %n : index
    %i1 = arith.addi %i0, %t : index
    %i2 = arith.addi %g, %s : index
    %i3 = arith.index_cast %i2 : index to i32
    %f = arith.sitofp %i3 : i32 to f32
    memref.store %f, %tile[%t] : memref<64xf32, #gpu.address_space<workgroup>>
    %v = memref.load %tile[%t] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %v, %y[%i1] : memref<?xf32>
    return
  }
  func.func @swap(%y: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 32, 1, 1>} {
    %tile = memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
    %c31 = arith.constant 31 : index
    %t = gpu.thread_id x
    %v = memref.load %y[%t] : memref<?xf32>
    memref.store %v, %tile[%t] : memref<32xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %o = arith.subi %c31, %t : index
    %w = memref.load %tile[%o] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %w, %y[%t] : memref<?xf32>
    return
  }
}
