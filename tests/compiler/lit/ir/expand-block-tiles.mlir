// RUN: %quiver-opt %S/../Inputs/block_kernel.mlir --qv-expand-block-tiles | %FileCheck %s
// RUN: %quiver-opt %S/../Inputs/block_kernel.mlir --qv-expand-block-tiles=keep=block | %FileCheck %s --check-prefix=KEEP
// The portable fallback: each of the 128 threads holds 32 * 32 / 128 = 8 elements of the tile;
// the product is a loop over k of fused multiply-adds reading the operands from memory.

// CHECK-LABEL: func.func @block
// CHECK: vector<8xf32>
// CHECK: math.fma
// CHECK-NOT: qv.block

// KEEP-LABEL: func.func @block
// KEEP: qv.block_mma k 16, {{.*}} : memref<?xbf16>, memref<?xbf16>, vector<32x32xf32>
// KEEP: qv.block_store
