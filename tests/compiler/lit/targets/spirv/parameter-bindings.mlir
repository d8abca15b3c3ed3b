// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-read-only-bindings{bindings=0,2}))' | %FileCheck %s --check-prefix=READ
// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-read-only-bindings{bindings=0}))' | %FileCheck %s --check-prefix=LOADS-WRITABLE
// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-specialize-parameters{kernel=k parameters=2}))' | %FileCheck %s --check-prefix=SPEC
// One kernel's spirv.module after MLIR's conversion: y[0] = x[n], with x and n only read.
// The bindings of only-read parameters are decorated NonWritable, unless the kernel loads from a
// binding not in the list (one it may write: then nothing is); a specialized scalar's load
// becomes a reference to a specialization constant with SpecId = its index.

// READ: spirv.GlobalVariable @k_arg_0 bind(0, 0) {non_writable}
// READ: spirv.GlobalVariable @k_arg_1 bind(0, 1) :
// READ: spirv.GlobalVariable @k_arg_2 bind(0, 2) {non_writable}

// LOADS-WRITABLE-NOT: non_writable

// SPEC: spirv.SpecConstant @k_spec_2 spec_id(2) = 0 : i32
// SPEC: %[[N:.*]] = spirv.mlir.referenceof @k_spec_2 : i32
// SPEC-NEXT: spirv.AccessChain %{{.*}}[%{{.*}}, %[[N]]]
// SPEC-NOT: spirv.Load "StorageBuffer" %{{.*}} : i32
spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.GlobalVariable @k_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @k_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @k_arg_2 bind(0, 2) : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
  spirv.func @k() "None" {
    %c0 = spirv.Constant 0 : i32
    %x = spirv.mlir.addressof @k_arg_0 : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %y = spirv.mlir.addressof @k_arg_1 : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %n = spirv.mlir.addressof @k_arg_2 : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
    %np = spirv.AccessChain %n[%c0] : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>, i32
    %nv = spirv.Load "StorageBuffer" %np : i32
    %xp = spirv.AccessChain %x[%c0, %nv] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32
    %v = spirv.Load "StorageBuffer" %xp : f32
    %yp = spirv.AccessChain %y[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32
    spirv.Store "StorageBuffer" %yp, %v : f32
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
}
