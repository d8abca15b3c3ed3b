// RUN: %quiver-opt %S/../../Inputs/launch_wait_kernel.mlir --qv-ptx-launch-waits | %FileCheck %s
// The wait is griddepcontrol.wait as inline PTX with a memory clobber, between the two loads
// (kept on sm_90+ and removed on older archs when each arch's LLVM module is made).

// CHECK-LABEL: func.func @step
// CHECK: memref.load %arg0
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"
// CHECK-NEXT: memref.load %arg1
// CHECK-NOT: qv.wait_prior_launches
