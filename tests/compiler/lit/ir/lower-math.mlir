// RUN: %quiver-opt %s --qv-lower-math | %FileCheck %s
// Only the exactly rounded math ops remain: exp (f32 and f16), tanh and rsqrt are expanded;
// sqrt and fma stay for the target's instructions.

// CHECK-LABEL: func.func @kernel
func.func @kernel(%io: memref<?xf32>, %hio: memref<?xf16>) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  %x = memref.load %io[%c0] : memref<?xf32>
  %h = memref.load %hio[%c0] : memref<?xf16>
  // CHECK-NOT: math.exp
  // CHECK-NOT: math.tanh
  // CHECK-NOT: math.rsqrt
  // CHECK: math.sqrt %{{.*}} : f32
  // CHECK: math.fma
  %e = math.exp %x : f32
  %t = math.tanh %e : f32
  %r = math.rsqrt %t : f32
  %s = math.sqrt %r : f32
  %f = math.fma %s, %s, %x : f32
  // f16 math runs in f32 and is rounded back.
  // CHECK: arith.extf %{{.*}} : f16 to f32
  // CHECK: arith.truncf %{{.*}} : f32 to f16
  %hs = math.exp %h : f16
  memref.store %f, %io[%c0] : memref<?xf32>
  memref.store %hs, %hio[%c0] : memref<?xf16>
  return
}
// CHECK-NOT: math.exp
