// RUN: %quiver-opt %s --qv-ptx-dot4-to-dp4a | %FileCheck %s
// qv.dot4_i8 is one dp4a instruction (inline PTX).

// CHECK-LABEL: func.func @kernel
func.func @kernel(%a: i32, %b: i32, %c: i32) -> i32 {
  // CHECK: %[[D:.*]] = llvm.inline_asm asm_dialect = att "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r" %arg0, %arg1, %arg2 : (i32, i32, i32) -> i32
  // CHECK: return %[[D]]
  %d = qv.dot4_i8 %a, %b, %c
  return %d : i32
}
