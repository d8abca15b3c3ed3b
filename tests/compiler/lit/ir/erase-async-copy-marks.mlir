// RUN: %quiver-opt %S/../Inputs/async_copy_kernel.mlir --qv-erase-async-copy-marks | %FileCheck %s
// The group marks go; the marked copy stays an ordinary copy.

// CHECK-NOT: qv.copy_async_commit
// CHECK-NOT: qv.copy_async_wait
// CHECK-LABEL: func.func @copy
// CHECK: vector.load {{.*}} {qv.copy_async}
// CHECK-NEXT: vector.store {{.*}} {qv.copy_async}
// CHECK-NEXT: vector.load
// CHECK-NOT: qv.copy_async_
