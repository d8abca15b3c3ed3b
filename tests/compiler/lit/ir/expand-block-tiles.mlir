// RUN: %quiver-opt %S/../Inputs/block_kernel.mlir --qv-expand-block-tiles | %FileCheck %s
// RUN: %quiver-opt %S/../Inputs/block_kernel.mlir --qv-expand-block-tiles=keep=block | %FileCheck %s --check-prefix=KEEP
// The portable fallback: each of the 128 threads holds 32 * 32 / 128 = 8 elements of the tile;
// the product is a loop over k of fused multiply-adds reading the operands from memory.

// CHECK-NOT: func.func private @qv.block
// CHECK-LABEL: func.func @block
// CHECK: vector<8xf32>
// CHECK: math.fma
// CHECK-NOT: call @qv.block

// KEEP-LABEL: func.func @block
// KEEP: call @qv.block_mma.k16.g.bf16.g.bf16.32x32
// KEEP: call @qv.block_store.g.f32.32x32
