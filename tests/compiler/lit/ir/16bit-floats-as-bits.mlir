// RUN: %quiver-opt %s --qv-16bit-floats-as-bits="bf16=true" | %FileCheck %s --check-prefixes=CHECK,BF16
// RUN: %quiver-opt %s --qv-16bit-floats-as-bits="f16=true bf16=true" | %FileCheck %s --check-prefixes=CHECK,BOTH
// Buffers and values of the carried types become i16; conversions are integer arithmetic.

// CHECK-LABEL: func.func @kernel
// BF16-SAME: memref<?xi16>, %{{.*}}: memref<?xf16>
// BOTH-SAME: memref<?xi16>, %{{.*}}: memref<?xi16>
func.func @kernel(%a: memref<?xbf16>, %h: memref<?xf16>, %out: memref<?xf32>) attributes {qv.kernel, qv.block = array<i32: 1, 1, 1>} {
  %c0 = arith.constant 0 : index
  // CHECK-NOT: bf16
  // BF16: arith.extf %{{.*}} : f16 to f32
  // BOTH-NOT: f16
  %x = memref.load %a[%c0] : memref<?xbf16>
  %y = memref.load %h[%c0] : memref<?xf16>
  %xf = arith.extf %x : bf16 to f32
  %yf = arith.extf %y : f16 to f32
  %s = arith.addf %xf, %yf : f32
  memref.store %s, %out[%c0] : memref<?xf32>
  return
}
