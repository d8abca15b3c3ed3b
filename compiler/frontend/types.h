// Mapping Clang types to the kernel language's types: MLIR types for codegen, manifest
// scalar types for the fat binary, and the canonical spelling used in kernel names.
#pragma once

#include <optional>
#include <string>

#include "clang/AST/Type.h"
#include "format/manifest.h"
#include "mlir/IR/Types.h"

namespace clang { class ASTContext; class TemplateArgument; class FunctionDecl; class Decl; }

namespace quiver::frontend {

// The element type behind a scalar C++ type (bool, ints, float, double, qv::half, qv::bf16).
std::optional<format::ScalarType> scalar_kind(clang::QualType t);
bool is_signed(format::ScalarType t);
bool is_float(format::ScalarType t);

// The MLIR type of a value of this kind (bool -> i1) and of its storage in memory (bool -> i8).
mlir::Type value_type(mlir::MLIRContext& ctx, format::ScalarType t);
mlir::Type memory_type(mlir::MLIRContext& ctx, format::ScalarType t);

// qv::shared<T, N>: returns the element type and N.
bool is_shared_array(clang::QualType t, clang::QualType* element = nullptr, uint64_t* count = nullptr);

// qv::vec<T, N>: returns the element type and N.
bool is_vec(clang::QualType t, clang::QualType* element = nullptr, uint32_t* count = nullptr);
// qv::matrix_a<T>, qv::matrix_b<T>, qv::matrix_acc<T>: 16x16 tiles of a subgroup (docs/matrix.md).
enum class MatrixUse { A, B, Acc };
bool is_matrix(clang::QualType t, clang::QualType* element = nullptr, MatrixUse* use = nullptr);
// qv::warpgroup_acc<T, N>: a 64 x N accumulator of a warpgroup (docs/matrix.md "Warpgroups").
bool is_warpgroup_acc(clang::QualType t, clang::QualType* element = nullptr, uint32_t* n = nullptr);
// qv::block_acc<T, M, N>: an M x N accumulator of the whole block (docs/matrix.md "Block tiles").
bool is_block_acc(clang::QualType t, clang::QualType* element = nullptr, uint32_t* m = nullptr, uint32_t* n = nullptr);
// The element type of a qv::vec, a qv::matrix_* or a qv::warpgroup_acc.
bool value_element(clang::QualType t, clang::QualType* element);
// qv::half, qv::bf16, qv::vec<T, N> and the matrix tiles: class types the kernel language treats as values.
bool is_value_record(clang::QualType t);
// The MLIR type of a value held in memory (buffers, shared arrays, slots): scalars as
// memory_type, qv::vec<T, N> as vector<N x T>, a matrix tile as vector<256 x T> (row-major, the
// neutral IR's tile value: docs/ir.md), a warpgroup accumulator as vector<N/2 x f32> (a thread's
// share; vector<N/2 x i32> for warpgroup_acc<int32_t, N>), a block accumulator as vector<M x N x f32>
// (i32 for int8 products; the whole tile: the only rank-2 vector the front end makes). Null for anything else (and for matrix
// element types the matrix units do not take: A and B are half or bf16 with float accumulators,
// or int8_t (512 elements) with int32_t ones; warpgroup accumulators float or int32, N = 16 ..
// 256 in steps of 16).
mlir::Type storage_type(mlir::MLIRContext& ctx, clang::QualType t);

// Whether `d` (or the template it was instantiated from) carries [[clang::annotate(what)]].
bool has_qv_annotation(const clang::Decl* d, llvm::StringRef what);

// Canonical spelling of a type in kernel names: "float", "int32_t", "bf16", "vec<float, 4>".
std::string canonical_type_name(clang::QualType t);
// "scale_rows<float, 4096>" for a template instantiation, "saxpy" otherwise.
std::string canonical_kernel_name(const clang::FunctionDecl* fd);
// A C identifier for the name: "scale_rows_float_4096".
std::string symbol_for(const std::string& canonical_name);

}  // namespace quiver::frontend
