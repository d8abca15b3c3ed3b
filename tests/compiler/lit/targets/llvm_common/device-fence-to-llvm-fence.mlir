// RUN: %quiver-opt %s --qv-device-fence-to-llvm-fence | %FileCheck %s --check-prefix=CPU
// RUN: %quiver-opt %s "--qv-device-fence-to-llvm-fence=syncscope=agent" | %FileCheck %s --check-prefix=AGENT
// qv.device_fence is an acquire-release llvm.fence: the whole system's on the CPU (its blocks run
// on several OS threads), the agent's on an AMD GPU.

// CPU-LABEL: func.func @publish
// CPU: memref.store
// CPU-NEXT: llvm.fence acq_rel
// CPU-NEXT: memref.load
// AGENT-LABEL: func.func @publish
// AGENT: llvm.fence syncscope("agent") acq_rel
// CPU-NOT: qv.device_fence
// AGENT-NOT: qv.device_fence
func.func @publish(%out: memref<?xf32>, %in: memref<?xf32>, %v: f32, %i: index) -> f32 {
  memref.store %v, %out[%i] : memref<?xf32>
  qv.device_fence
  %r = memref.load %in[%i] : memref<?xf32>
  return %r : f32
}
