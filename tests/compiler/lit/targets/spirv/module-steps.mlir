// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-alias-shared-bindings))' | %FileCheck %s --check-prefix=ALIAS
// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(spirv-update-vce,qv-spirv-subgroup-builtin-capability))' | %FileCheck %s --check-prefix=BUILTIN
// RUN: %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(spirv-update-vce,qv-spirv-list-interfaces))' | %FileCheck %s --check-prefix=INTERFACE
// RUN: ! %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-list-interfaces))' 2>&1 | %FileCheck %s --check-prefix=NO-VCE
// The steps that make one kernel's spirv.module whole after spirv-lower-abi-attrs:
// - a buffer and its word view share a binding, and both are decorated Aliased; a variable
//   alone at its binding is not;
// - a module that reads the subgroup lane builtin requires GroupNonUniform, which MLIR's VCE
//   deduction misses;
// - the entry point lists every variable its function uses (workgroup arrays too), in SPIR-V 1.4.
// Each refines the triple spirv-update-vce deduces, and says so when there is none.

// ALIAS: spirv.GlobalVariable @k_arg_0 bind(0, 0) {aliased}
// ALIAS: spirv.GlobalVariable @k_arg_0_words bind(0, 0) {aliased}
// ALIAS: spirv.GlobalVariable @k_arg_1 bind(0, 1) :

// BUILTIN: spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader, GroupNonUniform]

// INTERFACE: spirv.module Logical GLSL450 requires #spirv.vce<v1.4,
// INTERFACE: spirv.EntryPoint "GLCompute" @k, @__builtin__SubgroupLocalInvocationId__, @k_arg_0, @tile

// NO-VCE: error: qv-spirv-list-interfaces needs the module's VCE triple: run spirv-update-vce before it
spirv.module Logical GLSL450 attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.5, [Shader, GroupNonUniform], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>} {
  spirv.GlobalVariable @k_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @k_arg_0_words bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
  spirv.GlobalVariable @k_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @__builtin__SubgroupLocalInvocationId__ built_in("SubgroupLocalInvocationId") : !spirv.ptr<i32, Input>
  spirv.GlobalVariable @tile : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
  spirv.func @k() "None" {
    %c0 = spirv.Constant 0 : i32
    %lane_ptr = spirv.mlir.addressof @__builtin__SubgroupLocalInvocationId__ : !spirv.ptr<i32, Input>
    %lane = spirv.Load "Input" %lane_ptr : i32
    %x = spirv.mlir.addressof @k_arg_0 : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %xp = spirv.AccessChain %x[%c0, %lane] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32
    %v = spirv.Load "StorageBuffer" %xp : f32
    %t = spirv.mlir.addressof @tile : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
    %tp = spirv.AccessChain %t[%c0, %lane] : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>, i32, i32
    spirv.Store "Workgroup" %tp, %v : f32
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
  spirv.ExecutionMode @k "LocalSize", 64, 1, 1
}

