// The qv dialect: the operations of quiver's neutral IR that no upstream dialect has
// (docs/ir.md "The qv dialect"). Values keep builtin types (vectors, memrefs), so everything
// upstream that carries them (scf, cf, slots, element-wise arith) stays as it is.
#ifndef QUIVER_QV_DIALECT
#define QUIVER_QV_DIALECT

include "mlir/IR/OpBase.td"

def Qv_Dialect : Dialect {
  let name = "qv";
  let summary = "quiver's own operations: the language's intrinsics with no upstream op";
  let description = [{
    Operations the kernel language offers and upstream MLIR does not: matrix tiles (loads,
    stores, products, row statistics), block tiles, warpgroup products and their accumulator
    stores, the group marks of asynchronous copies, the dot product of four signed bytes. Each
    target lowers them to its instructions (PTX: mma.sync, wgmma; SPIR-V: cooperative matrices)
    or asks for the portable expansion (compiler/ir).
  }];
  let cppNamespace = "::quiver::ir::qv";
}

class Qv_Op<string mnemonic, list<Trait> traits = []> : Op<Qv_Dialect, mnemonic, traits>;

#endif  // QUIVER_QV_DIALECT
