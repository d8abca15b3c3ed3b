// RUN: %quiver-opt %s --qv-math-to-llvm-intrinsics | %FileCheck %s
// The exact math ops become calls of LLVM's generic intrinsics, named by their overload type,
// not the typed LLVM-dialect ops that the GPU conversions would turn into libdevice calls.

// CHECK-LABEL: func.func @f
func.func @f(%x: f32, %v: vector<4xf32>, %h: bf16) -> (f32, vector<4xf32>, bf16) {
  // CHECK: llvm.call_intrinsic "llvm.sqrt.f32"
  // CHECK: llvm.call_intrinsic "llvm.fma.f32"
  // CHECK: llvm.call_intrinsic "llvm.floor.v4f32"
  // CHECK: llvm.call_intrinsic "llvm.fabs.bf16"
  // CHECK-NOT: math.
  %s = math.sqrt %x : f32
  %f = math.fma %s, %s, %x : f32
  %fl = math.floor %v : vector<4xf32>
  %a = math.absf %h : bf16
  return %f, %fl, %a : f32, vector<4xf32>, bf16
}
