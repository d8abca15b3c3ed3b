// RUN: %quiver-opt %s --qv-align-workgroup-globals | %FileCheck %s
// Workgroup arrays (address space 3) get the alignment ir::workgroup_layout assumes: 64 bytes,
// 1024 for whole KiB and for the dynamic (zero-length) array; other address spaces stay.

// CHECK: llvm.mlir.global internal @small() {addr_space = 3 : i32, alignment = 64 : i64}
llvm.mlir.global internal @small() {addr_space = 3 : i32} : !llvm.array<4 x f32>
// CHECK: llvm.mlir.global internal @big() {addr_space = 3 : i32, alignment = 1024 : i64}
llvm.mlir.global internal @big() {addr_space = 3 : i32} : !llvm.array<1024 x f32>
// CHECK: llvm.mlir.global external @dynamic() {addr_space = 3 : i32, alignment = 1024 : i64}
llvm.mlir.global external @dynamic() {addr_space = 3 : i32} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @private_array() {addr_space = 0 : i32} : !llvm.array<4 x f32>
llvm.mlir.global internal @private_array() {addr_space = 0 : i32} : !llvm.array<4 x f32>
