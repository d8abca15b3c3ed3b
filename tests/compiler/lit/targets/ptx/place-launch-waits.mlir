// RUN: %quiver-opt %s --qv-ptx-place-launch-waits=overlap=true | %FileCheck %s
// RUN: %quiver-opt %s --qv-ptx-place-launch-waits=overlap=false | %FileCheck %s --check-prefix=NONE
// On the kernels' LLVM-dialect module, per arch (docs/abi.md "Overlapped launches"). Where the
// arch has griddepcontrol: a kernel that waits (qv::wait_prior_launches) waits again before each
// return, one that does not waits at its entry, and each wait is followed by launch_dependents;
// a helper that is not a kernel is left alone. Elsewhere every wait is removed.

// CHECK-LABEL: llvm.func @step(
// CHECK: llvm.load
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.launch_dependents;", "~{memory}"
// CHECK-NEXT: llvm.load
// CHECK: ^bb1:
// CHECK-NEXT: llvm.inline_asm {{.*}}"griddepcontrol.wait;"
// CHECK-NEXT: llvm.return
// CHECK: ^bb2:
// CHECK: llvm.inline_asm {{.*}}"griddepcontrol.wait;"
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func @accumulate(
// CHECK-NEXT: llvm.inline_asm {{.*}}"griddepcontrol.wait;"
// CHECK-NEXT: llvm.inline_asm {{.*}}"griddepcontrol.launch_dependents;"
// CHECK-NEXT: llvm.load
// CHECK-NOT: griddepcontrol
// CHECK-LABEL: llvm.func @helper(
// CHECK-NEXT: llvm.inline_asm {{.*}}"griddepcontrol.wait;"
// CHECK-NEXT: llvm.return

// NONE-NOT: griddepcontrol
module {
  llvm.func @step(%x: !llvm.ptr, %y: !llvm.ptr, %c: i1) attributes {nvvm.kernel} {
    %a = llvm.load %x : !llvm.ptr -> f32
    llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}" : () -> ()
    %b = llvm.load %y : !llvm.ptr -> f32
    llvm.cond_br %c, ^bb1, ^bb2
  ^bb1:
    llvm.return
  ^bb2:
    %s = llvm.fadd %a, %b : f32
    llvm.store %s, %y : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @accumulate(%x: !llvm.ptr) attributes {nvvm.kernel} {
    %a = llvm.load %x : !llvm.ptr -> f32
    %s = llvm.fadd %a, %a : f32
    llvm.store %s, %x : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @helper() {
    llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}" : () -> ()
    llvm.return
  }
}
