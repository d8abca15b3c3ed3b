// RUN: %quiver-opt %s --qv-ptx-share-dynamic-shared-memory | %FileCheck %s
// Two lowered kernels, each with convert-gpu-to-nvvm's internal zero-length dynamic shared memory
// global, spliced into one module: one external array at the module's start, addressed by both;
// other globals untouched.

// CHECK: module {
// CHECK-NEXT: llvm.mlir.global external @__qv_dynamic_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-NOT: __dynamic_shmem__
// CHECK: llvm.mlir.global internal @table
// CHECK-LABEL: llvm.func @a(
// CHECK: llvm.mlir.addressof @__qv_dynamic_shared : !llvm.ptr<3>
// CHECK-LABEL: llvm.func @b(
// CHECK: llvm.mlir.addressof @__qv_dynamic_shared : !llvm.ptr<3>
// CHECK-NOT: __dynamic_shmem__
module {
  llvm.mlir.global internal @table(dense<1.0> : tensor<4xf32>) {addr_space = 3 : i32} : !llvm.array<4 x f32>
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @a(%p: !llvm.ptr) {
    %s = llvm.mlir.addressof @__dynamic_shmem__0 : !llvm.ptr<3>
    %v = llvm.load %s : !llvm.ptr<3> -> f32
    llvm.store %v, %p : f32, !llvm.ptr
    llvm.return
  }
  llvm.mlir.global internal @__dynamic_shmem__1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.func @b(%p: !llvm.ptr) {
    %s = llvm.mlir.addressof @__dynamic_shmem__1 : !llvm.ptr<3>
    %v = llvm.load %s : !llvm.ptr<3> -> f32
    llvm.store %v, %p : f32, !llvm.ptr
    llvm.return
  }
}
