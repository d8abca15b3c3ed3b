// Matrix-unit intrinsics of the neutral IR (docs/ir.md "Matrix tiles", docs/matrix.md).
//
// A 16x16 tile of the kernel language (qv::matrix_a / matrix_b / matrix_acc) is, in the neutral
// IR, one `vector<256 x T>` value: the whole tile, row-major. Nothing else in the language makes
// 256-element vectors, so the type alone marks a tile. Targets decide how a subgroup holds it:
// PTX gives each lane the 8 elements mma.sync wants (compiler/targets/ptx/matrix_mma_sync.cpp);
// the portable fallback here gives every lane the whole tile as floats.
// int8 tiles are 32 deep, the K the matrix units take for 8-bit inputs: A (16 x 32) and B
// (32 x 16) are `vector<512 x i8>`, row-major, and their accumulator `vector<256 x i32>` (int8
// products exact, int32 sums wrapping). Nothing else makes 512-element vectors of i8 either.
//
// The intrinsics are operations of the qv dialect (compiler/ir/dialect/QvOps.td), operands in
// this order:
//   qv.matrix_load <role>  (memref<..xT> m, index off, i32 stride) -> vector<256xT>
//        role a:   A[i][k] = m[off + i*stride + k]      b:   B[k][j] = m[off + k*stride + j]
//        role bt:  B[k][j] = m[off + j*stride + k]      acc: C[i][j] = m[off + i*stride + j] (C = f32 | i32)
//   qv.matrix_store    (memref<..xU>, index, i32, vector<256xC>)                  m[off + i*stride + j] = U(C[i][j])
//   qv.matrix_mma      (vector<256xT> a, vector<256xT> b, vector<256xC> c) -> vector<256xC>   a x b + c
//   qv.matrix_row_max  (vector<256xf32> c) -> vector<256xf32>                     R[i][j] = max_j' C[i][j']
//   qv.matrix_row_sum  same                                                        R[i][j] = sum_j' C[i][j']
//   qv.matrix_to_a     (vector<256xf32> c) -> vector<256xT>                        A[i][k] = T(C[i][k])
// Element-wise arithmetic and math on tiles (arith / math ops on vector<256 x f32>) are not
// intrinsics: every target's tile layout keeps them element-wise. So is the conversion of an
// int32 accumulator to a float one (arith.sitofp on vector<256 x i32>): the two accumulator
// types place their elements alike on every target.
// T is f16 or bf16 with C = f32 and U = f32, f16 or bf16 (round to nearest even); or T is i8
// (A and B then vector<512 x i8>: 16 x 32 and 32 x 16) with C = U = i32.
#pragma once

#include <optional>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::ir {

inline constexpr int64_t kMatrixTile = 16;
inline constexpr int64_t kMatrixElements = kMatrixTile * kMatrixTile;
// K of an int8 product, and the elements of an int8 A or B tile.
inline constexpr int64_t kMatrixDepthI8 = 32;
inline constexpr int64_t kMatrixElementsI8 = kMatrixTile * kMatrixDepthI8;

enum class MatrixOp { LoadA, LoadB, LoadBT, LoadAcc, Store, Mma, RowMax, RowSum, ToA };

// Which matrix intrinsic `op` is, if any.
std::optional<MatrixOp> matrix_op_of(mlir::Operation* op);
// The qv operation of intrinsic `op` on `operands` (in the order above); `result` is the tile it
// makes (null for a store).
mlir::Operation* create_matrix_op(mlir::OpBuilder& b, mlir::Location l, MatrixOp op, mlir::ValueRange operands,
                                  mlir::Type result);

// vector<256 x T> or vector<512 x i8>: a tile.
bool is_matrix_type(mlir::Type t);
// A tile, or a right operand that a target retyped to vector<K x 16 x T> (K = 16, or 32 for i8)
// to tell it from a left one (compiler/targets/spirv/matrix_coop.cpp: cooperative matrices carry
// their use in the type).
bool is_tile_type(mlir::Type t);
// A tile of the int8 family: an i8 operand (either shape) or an i32 accumulator.
bool is_int8_matrix_type(mlir::Type t);
// K of a product whose operands have this element type: 32 for i8, 16 for the 16-bit types.
int64_t matrix_depth(mlir::Type element);

// Changes, in place, the type of every tile value under `root` (block arguments, results,
// memref slots holding tiles) to `convert(old)`, and splat constants with it. The operations
// that carry tiles without looking inside (branches, scf, select, slots, element-wise arith)
// stay valid; the matrix operations must be rewritten by the caller.
void retype_matrix_values(mlir::Operation* root, llvm::function_ref<mlir::VectorType(mlir::VectorType)> convert);
// The same for the vector values of the types `chosen` picks (block tiles: ir/block_tiles.h).
void retype_vector_values(mlir::Operation* root, llvm::function_ref<bool(mlir::Type)> chosen,
                          llvm::function_ref<mlir::VectorType(mlir::VectorType)> convert);

// The portable fallback: every lane holds the whole tile as f32 (int8 tiles: as i32, exact);
// loads read all the elements, mma is 4096 fused multiply-adds in k order (int8: 8192 exact
// integer multiply-adds, wrapping), a store writes row r from lane r % subgroup size,
// row reductions are butterflies within each row, to_a rounds each element to T and back.
// Correct for any subgroup size.
// `only`, when given, picks the functions to expand.
void expand_matrix_ops(mlir::ModuleOp module, llvm::function_ref<bool(mlir::func::FuncOp)> only = nullptr);

}  // namespace quiver::ir
