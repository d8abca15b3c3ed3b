// RUN: ! %quiver-opt %s --pass-pipeline='builtin.module(spirv.module(qv-spirv-vulkan-memory-model))' 2>&1 | %FileCheck %s
// A device-scope barrier (qv::device_fence) in a module on cooperative matrices is refused: the
// Vulkan memory model that module takes would need MakeAvailable / MakeVisible and a device
// feature (vulkanMemoryModelDeviceScope) the image choice does not check.

// CHECK: error: qv::device_fence in a kernel on cooperative matrices is not supported
spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader, CooperativeMatrixKHR], [SPV_KHR_cooperative_matrix]> {
  spirv.func @f() "None" {
    spirv.MemoryBarrier <Device>, <AcquireRelease|UniformMemory>
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @f
}
