// Matrix tiles as SPIR-V cooperative matrices (SPV_KHR_cooperative_matrix, Vulkan's
// VK_KHR_cooperative_matrix), for the spirv target's `vulkan1.3_coopmat` image (docs/matrix.md).
//
// A tile becomes one `!spirv.coopmatrix<16x16xT, Subgroup, Use>` value (int8: 16x32 A, 32x16 B,
// 16x16 i32 accumulator): the driver decides which invocation holds which element. The use
// (MatrixA, MatrixB, MatrixAccumulator) is part of the type, so before legalisation the right
// operands of products (qv::matrix_b) are retyped to vector<K x 16 x T> (ir::is_tile_type) to
// tell them from left ones; legalisation keeps tiles
// whole (LegalizeOptions::expand_matrix = false), and the conversion to the SPIR-V dialect maps
// the three tile types to the three uses and the qv.matrix_* operations to
// OpCooperativeMatrix{Load,Store,MulAdd}KHR.
//
// What this lowering takes: half tiles (f16 x f16 -> f32, what every device with the extension
// reports at 16x16x16) and int8 tiles (i8 x i8 -> i32 at 16x16x32, signed, wrapping: NVIDIA
// reports it), loads from buffers and shared memory, stores to float and half memory (int32
// accumulators to int32), products, element-wise + - * / on float accumulators and by scalars,
// + - on int32 ones, and int32 to float accumulators (OpConvertSToF). A kernel that needs more
// (bf16 tiles, row_max / row_sum / to_matrix_a, other math on accumulators) keeps the portable
// fallback in this image: `coop_lowerable` says which and why.
#pragma once

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::spirv_target {

// Whether every tile operation of kernel `fn` has a cooperative-matrix form; if not, `why` says
// which operation does not. A kernel without tiles is not lowerable (nothing to lower).
bool coop_lowerable(mlir::func::FuncOp fn, std::string& why);

// Retypes the right operands of products (qv::matrix_b tiles: loads of B, values moved into
// mma's second operand) in the kernels named `symbols` to vector<K x 16 x T>.
void mark_right_operands(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

// What a device must offer to run an image whose cooperative-matrix kernels are `kernels`
// (format::Image::requirements, the vocabulary of docs/format.md "Image requirements"): the
// half configuration where a kernel multiplies or loads half tiles (or has accumulators only),
// the int8 one where a kernel has int8 tiles. Called before legalisation.
std::vector<std::string> cooperative_matrix_requirements(llvm::ArrayRef<mlir::func::FuncOp> kernels);

// Block tiles (ir/block_tiles.h) as workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2's
// workgroup scope and flexible sizes; the instructions are SPV_KHR_cooperative_matrix's): whether
// every block-tile operation of `fn` has that form (half operands with float or half stores, int8
// operands with int32 stores, + - * /), and what a device must offer for `kernels`
// ("cooperative_matrix_workgroup:MxNxK:f16*f16+f32:T" or ":i8*i8+i32:"
// per product shape and block size T, docs/format.md). A kernel without block tiles is not lowerable.
bool block_coop_lowerable(mlir::func::FuncOp fn, std::string& why);
std::vector<std::string> block_coop_requirements(llvm::ArrayRef<mlir::func::FuncOp> kernels);

// Tile types to cooperative matrix types, and the matrix intrinsics / tile arithmetic to
// cooperative-matrix instructions. Needs CooperativeMatrixKHR, Float16 and Int8 in the target env.
void populate_matrix_coop_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns);

}  // namespace quiver::compiler::spirv_target
