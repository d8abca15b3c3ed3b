// Accumulator operations that SPV_KHR_cooperative_matrix lacks — qv::row_max / qv::row_sum,
// qv::to_matrix_a, and element-wise math beyond + - * / (exp2, max, products of two
// accumulators) — for the spirv target's `vulkan1.3_coopmat` image (docs/matrix.md).
//
// A cooperative matrix's elements belong to invocations in a way only the driver knows, so these
// operations run on *lane shares* instead: the accumulator goes through a 1 KiB workgroup-memory
// scratch of the subgroup (OpCooperativeMatrixStoreKHR, a subgroup barrier), and lane L of the
// 32 then holds row L / 2, columns 8 (L % 2) .. + 7 as a vector<8 x f32>. Element-wise math on a
// share is per element; a row reduction is 7 in-lane steps and one shuffle with lane L ^ 1; the
// way back is the reverse trip (an OpCooperativeMatrixLoadKHR), and to_matrix_a writes the share
// rounded to half and loads it as a left operand. Products, loads and stores stay cooperative.
//
// Which values live as shares is decided per value, so a kernel pays a trip only where an
// accumulator crosses between the two: products' results and operands are matrices; the results
// and operands of the operations above are shares; + - / and scaling follow their operands and
// users (a value all of whose users want a share becomes one), loads of accumulators whose users
// want shares read the share straight from memory, and stores of shares write it.
//
// Shares assume 32-invocation subgroups: an image that uses them requires `subgroup_size:32`
// (docs/format.md "Image requirements").
#pragma once

#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace quiver::compiler::spirv_target {

// The subgroup size lane shares assume, and the image requirement that says so.
inline constexpr int64_t kShareSubgroupSize = 32;
inline constexpr const char* kShareSubgroupRequirement = "subgroup_size:32";

// Whether every tile operation of `fn` is either cooperative or one lane shares take (half tiles
// only), and its blocks are whole 32-invocation subgroups; `why` says what is missing.
bool lanes_applicable(mlir::func::FuncOp fn, std::string& why);

// Rewrites `fn` so that the accumulator operations without a cooperative-matrix form run on lane
// shares (see above); afterwards coop_lowerable(fn) holds. Needs lanes_applicable(fn).
// Between the two halves of a trip through the scratch stands a qv.subgroup_barrier: all
// invocations of the subgroup reach it before any goes on, and their workgroup-memory writes are
// visible after it.
void move_accumulator_math_to_lanes(mlir::func::FuncOp fn);

// The pass qv-spirv-accumulator-math-to-lanes: move_accumulator_math_to_lanes on each kernel of
// `symbols`, whose subgroup size then folds to 32 (the image requires it: divisions by the
// subgroup size fold, loops over lanes unroll). std::runtime_error names a kernel lane shares
// cannot take, and why.
void move_kernels_accumulator_math_to_lanes(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols);

}  // namespace quiver::compiler::spirv_target
