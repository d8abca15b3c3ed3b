// RUN: %quiver-opt %s --qv-ptx-outline-kernels=kernels=big,small | %FileCheck %s
// RUN: ! %quiver-opt %s --qv-ptx-outline-kernels=kernels=missing 2>&1 | %FileCheck %s --check-prefix=MISSING
// Each named kernel moves into a gpu.module of its own, in the order named: buffers as
// memref<2^40 x T> (the bare-pointer convention), the block as known_block_size,
// QV_MIN_BLOCKS as the NVVM minctasm annotation; workgroup memory within 48 KiB stays a
// .shared attribution, past it a view of the dynamic shared memory.

// CHECK-NOT: func.func @small
// CHECK-NOT: func.func @big
// CHECK-LABEL: gpu.module @qv_ptx_big
// CHECK: gpu.func @big(%{{.*}}: memref<1099511627776xf32>, %{{.*}}: i32) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.view
// CHECK-SAME: memref<16384xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: gpu.module @qv_ptx_small
// CHECK: gpu.func @small(%{{.*}}: memref<1099511627776xf16>)
// CHECK-SAME: workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// CHECK-SAME: nvvm.minctasm = 4
// CHECK-NOT: gpu.dynamic_shared_memory

// MISSING: no kernel 'missing' (func.func with qv.kernel and a body) in the module
module {
  func.func @small(%x: memref<?xf16>) attributes {qv.kernel, qv.block = array<i32: 64, 1, 1>, qv.min_blocks = 4 : i32} {
    %tile = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf16>
    %f = arith.extf %v : f16 to f32
    memref.store %f, %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
    return
  }
  func.func @big(%y: memref<?xf32>, %n: i32) attributes {qv.kernel, qv.block = array<i32: 256, 1, 1>} {
    %tile = memref.alloca() : memref<16384xf32, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %v = memref.load %tile[%c0] : memref<16384xf32, #gpu.address_space<workgroup>>
    memref.store %v, %y[%c0] : memref<?xf32>
    return
  }
}
