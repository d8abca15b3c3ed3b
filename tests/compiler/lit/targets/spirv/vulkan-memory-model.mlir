// RUN: %quiver-opt %s --split-input-file --pass-pipeline='builtin.module(spirv.module(qv-spirv-vulkan-memory-model))' | %FileCheck %s
// A module with cooperative matrices takes the Vulkan memory model (SPV_KHR_cooperative_matrix
// requires it of shaders), with its capability and extension; others keep GLSL450's.

// CHECK: spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []>
// CHECK: spirv.module Logical Vulkan requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR, VulkanMemoryModel], [SPV_KHR_cooperative_matrix, SPV_KHR_vulkan_memory_model]>

spirv.module Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  spirv.func @k() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
}

// -----

spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
  spirv.func @m() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @m
}


