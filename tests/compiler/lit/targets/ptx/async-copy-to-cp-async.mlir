// RUN: %quiver-opt %S/../../Inputs/async_copy_kernel.mlir --qv-ptx-async-copy-to-cp-async | %FileCheck %s
// The marked 16-byte copy from a buffer into workgroup memory is one cp.async; the group marks
// are commit_group / wait_group; the ordinary load and store after them stay.

// CHECK-LABEL: func.func @copy
// CHECK-NOT: {qv.copy_async}
// CHECK: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: vector.load
// CHECK: vector.store
// CHECK-NOT: qv.copy_async_
