// RUN: %quiver-opt %s --qv-spirv-wrap-kernels=kernels=scale | %FileCheck %s --implicit-check-not=func.func
// RUN: ! %quiver-opt %s --qv-spirv-wrap-kernels=kernels=missing 2>&1 | %FileCheck %s --check-prefix=MISSING
// The kernel moves into a gpu.module of its own: its block is the entry point's LocalSize,
// parameter i is binding i of set 0 (a scalar in a StorageBuffer struct), a word view of a
// buffer (qv.buffer_views) a second variable at its buffer's binding; workgroup allocas become
// allocs (Workgroup variables), other allocas move to the entry as private (Function) variables.

// CHECK-LABEL: gpu.module @qv_spirv_scale
// CHECK: gpu.func @scale(%{{.*}}: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME: %{{.*}}: f32 {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1), StorageBuffer>},
// CHECK-SAME: %{{.*}}: memref<?xvector<4xf32>> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>})
// CHECK-SAME: kernel
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 2, 1]>
// CHECK-NEXT: memref.alloca() : memref<4xf32, #gpu.address_space<private>>
// CHECK-NEXT: memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.return

// MISSING: no kernel 'missing' (func.func with qv.kernel and a body) in the module
module {
  func.func @scale(%x: memref<?xf32>, %s: f32, %xw: memref<?xvector<4xf32>>) attributes {qv.kernel, qv.block = array<i32: 64, 2, 1>, qv.buffer_views = array<i32: 0>} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %tmp = memref.alloca() : memref<4xf32>
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf32>
    %m = arith.mulf %v, %s : f32
    memref.store %m, %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %m, %tmp[%c0] : memref<4xf32>
    %w = memref.load %tmp[%c0] : memref<4xf32>
    memref.store %w, %x[%c0] : memref<?xf32>
    return
  }
}
