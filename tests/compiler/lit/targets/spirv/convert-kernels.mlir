// RUN: %quiver-opt %s --qv-spirv-convert-kernels=kernels=scale | %FileCheck %s
// RUN: %quiver-opt %s --pass-pipeline='builtin.module(qv-spirv-convert-kernels{kernels=scale cooperative-matrix=true})' | %FileCheck %s --check-prefix=COOP
// RUN: ! %quiver-opt %s --qv-spirv-convert-kernels=kernels=bad 2>&1 | %FileCheck %s --check-prefix=BAD
// RUN: ! %quiver-opt %s --qv-spirv-convert-kernels=kernels=missing 2>&1 | %FileCheck %s --check-prefix=MISSING
// A wrapped kernel's gpu.module (qv-spirv-wrap-kernels) becomes a spirv.module beside it, with
// the Vulkan 1.2 environment (SPIR-V 1.6 with cooperative matrices for the coopmat image):
// buffers are StorageBuffer structs of runtime arrays, a scalar a StorageBuffer struct,
// workgroup allocations Workgroup variables, private ones Function variables. The ABI attributes
// stay for spirv-lower-abi-attrs. An op no pattern lowers is an error naming the kernel and the
// op's location.

// CHECK-LABEL: spirv.module @__spv__qv_spirv_scale Logical GLSL450
// CHECK-SAME: #spirv.vce<v1.5
// CHECK: spirv.GlobalVariable @__workgroup_mem__0 : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
// CHECK: spirv.func @scale(%{{.*}}: !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 2, 1]>
// CHECK: spirv.Variable : !spirv.ptr<!spirv.struct<(!spirv.array<4 x f32>)>, Function>
// CHECK: spirv.FMul
// qv.device_fence: a device-scope barrier over storage buffers.
// CHECK: spirv.MemoryBarrier <Device>, <AcquireRelease|UniformMemory>
// CHECK: spirv.Return
// The kernel that was not named keeps its gpu.module.
// CHECK: gpu.module @qv_spirv_bad

// COOP: spirv.module @__spv__qv_spirv_scale Logical GLSL450
// COOP-SAME: #spirv.vce<v1.6, [{{.*}}CooperativeMatrixKHR

// BAD: error: bad: {{.*}}'math.erf' cannot be lowered to SPIR-V

// MISSING: error: no gpu.module @qv_spirv_missing in the module
module {
  gpu.module @qv_spirv_scale {
    gpu.func @scale(%x: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}, %s: f32 {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1), StorageBuffer>}) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 2, 1]>} {
      %tmp = memref.alloca() : memref<4xf32, #gpu.address_space<private>>
      %tile = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      %m = arith.mulf %v, %s : f32
      memref.store %m, %tile[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %m, %tmp[%c0] : memref<4xf32, #gpu.address_space<private>>
      %w = memref.load %tmp[%c0] : memref<4xf32, #gpu.address_space<private>>
      memref.store %w, %x[%c0] : memref<?xf32>
      qv.device_fence
      gpu.return
    }
  }
  gpu.module @qv_spirv_bad {
    gpu.func @bad(%x: memref<?xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [32, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      %e = math.erf %v : f32
      memref.store %e, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
