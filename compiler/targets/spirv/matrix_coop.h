// Matrix tiles as SPIR-V cooperative matrices (SPV_KHR_cooperative_matrix, Vulkan's
// VK_KHR_cooperative_matrix), for the spirv target's `vulkan1.3_coopmat` image (docs/matrix.md).
//
// A tile becomes one `!spirv.coopmatrix<16x16xT, Subgroup, Use>` value: the driver decides which
// invocation holds which element. The use (MatrixA, MatrixB, MatrixAccumulator) is part of the
// type, so before legalisation the right operands of products (qv::matrix_b) are retyped to
// vector<16 x 16 x T> (ir::is_tile_type) to tell them from left ones; legalisation keeps tiles
// whole (LegalizeOptions::expand_matrix = false), and the conversion to the SPIR-V dialect maps
// the three tile types to the three uses and the matrix intrinsics to
// OpCooperativeMatrix{Load,Store,MulAdd}KHR.
//
// What this lowering takes: half tiles (f16 x f16 -> f32, what every device with the extension
// reports at 16x16x16), loads from buffers and shared memory, stores to float and half memory,
// products, and element-wise + - * / on accumulators and by scalars. A kernel that needs more
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
// mma's second operand) in `fn` and the intrinsic declarations to vector<16 x 16 x T>.
void mark_right_operands(mlir::ModuleOp module, llvm::ArrayRef<mlir::func::FuncOp> kernels);

// What a device must offer to run an image lowered this way (format::Image::requirements, the
// vocabulary of docs/format.md "Image requirements").
std::vector<std::string> cooperative_matrix_requirements();

// Tile types to cooperative matrix types, and the matrix intrinsics / tile arithmetic to
// cooperative-matrix instructions. Needs CooperativeMatrixKHR and Float16 in the target env.
void populate_matrix_coop_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns);

}  // namespace quiver::compiler::spirv_target
