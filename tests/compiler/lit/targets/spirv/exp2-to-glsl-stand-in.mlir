// RUN: %quiver-opt %s --qv-spirv-exp2-to-glsl-stand-in | %FileCheck %s
// f32 exp2 becomes the spirv.GL.Exp stand-in (retagged Exp2 when serialised); f16 stays.

// CHECK-LABEL: func.func @f
func.func @f(%x: f32, %h: f16) -> (f32, f16) {
  // CHECK: spirv.GL.Exp %{{.*}} : f32
  // CHECK-NOT: math.exp2 %{{.*}} : f32
  %e = math.exp2 %x : f32
  // CHECK: math.exp2 %{{.*}} : f16
  %eh = math.exp2 %h : f16
  return %e, %eh : f32, f16
}
