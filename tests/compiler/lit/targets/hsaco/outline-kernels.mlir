// RUN: %quiver-opt %s --qv-hsaco-outline-kernels="kernels=reduce wave-size=32" | %FileCheck %s \
// RUN:   --implicit-check-not=func.func --implicit-check-not=gpu.block_dim --implicit-check-not=gpu.grid_dim \
// RUN:   --implicit-check-not=gpu.subgroup_size --implicit-check-not=gpu.subgroup_reduce
// RUN: %quiver-opt %s --qv-hsaco-outline-kernels="kernels=reduce" | %FileCheck %s --check-prefix=WAVE64
// RUN: ! %quiver-opt %s --qv-hsaco-outline-kernels="kernels=reduce wave-size=16" 2>&1 | %FileCheck %s --check-prefix=WAVE16
// The kernel moves into a gpu.module of its own: buffers as global (address space 1) memrefs of
// 2^40 elements, its workgroup arrays as views of one byte array of the layout's size, the
// block size and the wave size as constants, the subgroup sum as a butterfly of shuffles over
// the wave, the grid size read from the HSA dispatch packet.

// CHECK-LABEL: gpu.module @qv_hsaco_reduce
// CHECK: gpu.func @reduce(%{{.*}}: memref<1099511627776xf32, 1>)
// CHECK-SAME: workgroup(%{{.*}} : memref<512xi8, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: arith.constant 1.600000e+02 : f32
// CHECK: memref.view
// CHECK-SAME: to memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"
// CHECK: arith.divui %{{.*}}, %c128 : index
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle

// WAVE64: arith.constant 1.920000e+02 : f32
// WAVE64-COUNT-6: gpu.shuffle xor
// WAVE64-NOT: gpu.shuffle

// WAVE16: wave-size = 16: AMD GPUs run waves of 32 or 64 lanes
module {
  func.func @reduce(%y: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 128, 1, 1>} {
    %tile = memref.alloca() : memref<128xf32, #gpu.address_space<workgroup>>
    %t = gpu.thread_id x
    %n = gpu.block_dim x
    %sg = gpu.subgroup_size : index
    %s = arith.addi %n, %sg : index
    %g = gpu.grid_dim x
    %gi = arith.index_cast %g : index to i32
    %gf = arith.sitofp %gi : i32 to f32
    %c0 = arith.constant 0 : index
    memref.store %gf, %y[%c0] : memref<?xf32>
    %f = arith.index_cast %s : index to i32
    %v = arith.sitofp %f : i32 to f32
    %r = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %r, %tile[%t] : memref<128xf32, #gpu.address_space<workgroup>>
    %w = memref.load %tile[%t] : memref<128xf32, #gpu.address_space<workgroup>>
    memref.store %w, %y[%t] : memref<?xf32>
    return
  }
}
