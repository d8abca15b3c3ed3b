// Block-tile intrinsics of the neutral IR (docs/matrix.md "Block tiles", docs/ir.md).
//
// qv::block_acc<float, M, N>, an accumulator held by the whole block, is one vector<M x N x f32>
// value (the whole tile, row-major; vector<M x N x i32> for int8 products): the only rank-2
// vector the front end makes, so the type alone marks it. Products read their operands straight from memory, so A and B are never
// values: a target either keeps the product whole (SPIR-V: one workgroup-scope cooperative
// product) or asks for the portable fallback below. Operations of the qv dialect
// (compiler/ir/dialect/QvOps.td), operands in this order:
//   qv.block_mma k K  (vector<MxNxf32> c, memref a, index a_off, i32 lda, memref b, index b_off, i32 ldb)
//                     -> vector<MxNxf32>     C + A B, A[i][k] = a[a_off + i*lda + k], B[k][j] = b[b_off + k*ldb + j]
//   qv.block_mma_bt k K  same, B[k][j] = b[b_off + j*ldb + k]
//   qv.block_store  (memref p, index off, i32 stride, vector<MxNxf32> c)   p[off + i*stride + j] = U(C[i][j])
//   qv.block_load   (memref p, index off, i32 stride) -> vector<MxNxf32>   C[i][j] = p[off + i*stride + j]
// Element-wise arithmetic on block tiles (arith on vector<M x N x f32>) is not an intrinsic.
#pragma once

#include <optional>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::ir {

enum class BlockOp { Mma, MmaBT, Store, Load };
// A product (Mma, MmaBT) rather than a move of the accumulator (Store, Load).
inline bool is_block_product(BlockOp op) { return op == BlockOp::Mma || op == BlockOp::MmaBT; }

// Which block-tile operation `op` is, if any.
std::optional<BlockOp> block_op_of(mlir::Operation* op);
// K of a qv.block_mma / _bt (0 for anything else).
int64_t block_product_depth(mlir::Operation* op);
// vector<M x N x f32> or vector<M x N x i32>: a block tile.
bool is_block_tile_type(mlir::Type t);

// The portable fallback, in every function `only` picks (all when null): thread t of the block's
// T threads (qv.block) holds elements t, t + T, ... of the row-major tile as vector<M*N/T x f32>;
// a product reads, for each of its elements, a row of A and a column of B from memory (K fused
// multiply-adds in k order, in a loop over k); a store writes its elements, a load reads them. Throws naming the
// kernel when M*N is not a multiple of T.
void expand_block_ops(mlir::ModuleOp module, llvm::function_ref<bool(mlir::func::FuncOp)> only = nullptr);

}  // namespace quiver::ir
