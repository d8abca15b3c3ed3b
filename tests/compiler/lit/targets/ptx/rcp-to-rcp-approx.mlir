// RUN: %quiver-opt %s --qv-ptx-rcp-to-rcp-approx | %FileCheck %s
// qv::rcp (1 / x marked afn) is rcp.approx.ftz.f32; an ordinary division stays.

// CHECK-LABEL: func.func @f
func.func @f(%x: f32) -> (f32, f32) {
  %one = arith.constant 1.0 : f32
  // CHECK: nvvm.rcp.approx.ftz.f
  %r = arith.divf %one, %x fastmath<afn> : f32
  // CHECK: arith.divf %{{.*}}, %{{.*}} : f32
  %q = arith.divf %one, %x : f32
  return %r, %q : f32, f32
}
