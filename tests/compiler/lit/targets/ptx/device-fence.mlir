// RUN: %quiver-opt %s --qv-ptx-device-fence | %FileCheck %s
// qv.device_fence is fence.acq_rel.gpu as inline PTX with a memory clobber, between the store
// and the load it orders.

// CHECK-LABEL: func.func @publish
func.func @publish(%out: memref<?xf32>, %in: memref<?xf32>, %v: f32, %i: index) -> f32 {
  // CHECK: memref.store
  // CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "fence.acq_rel.gpu;", "~{memory}"
  // CHECK-NEXT: memref.load
  // CHECK-NOT: qv.device_fence
  memref.store %v, %out[%i] : memref<?xf32>
  qv.device_fence
  %r = memref.load %in[%i] : memref<?xf32>
  return %r : f32
}
