// RUN: %quiver-opt %s --qv-ptx-exp2-to-ex2-approx | %FileCheck %s
// f32 exp2 (scalar, or element by element) is ex2.approx.f32; other types stay for the portable
// math lowering.

// CHECK-LABEL: func.func @f
func.func @f(%x: f32, %v: vector<2xf32>, %d: f64) -> (f32, vector<2xf32>, f64) {
  // CHECK: nvvm.ex2.approx
  // CHECK-NOT: math.exp2 %{{.*}} : f32
  %e = math.exp2 %x : f32
  // CHECK-COUNT-2: nvvm.ex2.approx
  %ev = math.exp2 %v : vector<2xf32>
  // CHECK: math.exp2 %{{.*}} : f64
  %ed = math.exp2 %d : f64
  return %e, %ev, %ed : f32, vector<2xf32>, f64
}
