// RUN: %quiver-opt %s --qv-align-vector-accesses | %FileCheck %s
// Vector loads and stores get their full size as alignment (qv::load's promise); scalar ones
// keep theirs.

// CHECK-LABEL: llvm.func @f
llvm.func @f(%p: !llvm.ptr, %q: !llvm.ptr) {
  // CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
  // CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<4xf16>, !llvm.ptr
  %h = llvm.load %q : !llvm.ptr -> vector<4xf16>
  llvm.store %h, %p {alignment = 2 : i64} : vector<4xf16>, !llvm.ptr
  // CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
  %s = llvm.load %q {alignment = 4 : i64} : !llvm.ptr -> f32
  llvm.return
}
