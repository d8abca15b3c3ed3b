// Warpgroup operations of the neutral IR (docs/matrix.md "Warpgroups", docs/ir.md): the qv
// dialect's qv.warpgroup_* (compiler/ir/dialect/QvOps.td, which gives their operands and types).
//
// A qv::warpgroup_acc<float, N> (64 x N floats held by 128 threads) is, in the neutral IR, one
// thread's share: vector<N/2 x f32>, in the layout of Hopper's wgmma accumulators, which every
// target keeps. With w = (linear thread id % 128) / 32, g = lane / 4, q = lane % 4, element
// 4i + 2h + s of the share (i < N/8, h, s < 2) is C[16w + g + 8h][8i + 2q + s]. So element-wise
// arithmetic stays element-wise and only the qv.warpgroup_* operations need a target's attention:
// the products (qv.warpgroup_mma, B stored K x N; qv.warpgroup_mma_bt, B stored N x K), commit,
// wait, barrier (the fallback: gpu.barrier) and the stores (plain, bounded, swizzled). The operand
// layout (swizzled 128-byte panels) is include/quiver/kernel.h's. int8 products (only _bt: 8-bit
// wgmma is K-major only) have an i32 share in the same layout, stored to i32 memory unconverted.
#pragma once

#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::ir {

enum class WarpgroupOp { Mma, MmaBT, Commit, Wait, Barrier, Store, StoreSwizzled, StoreBounded };

inline constexpr int64_t kWarpgroupThreads = 128;

// Which warpgroup operation `op` is, if any.
std::optional<WarpgroupOp> warpgroup_op_of(mlir::Operation* op);

// The block's linear thread id, x + dim_x (y + dim_y z), as an index built at the builder's point.
mlir::Value linear_thread_id(mlir::OpBuilder& b, mlir::Location l);

// Where this thread's share of a warpgroup accumulator sits: row 16w + g (+ 8 for h = 1) and
// column 2q (+ 8i + s), as index values built at the builder's point.
struct WarpgroupLane {
  mlir::Value row, col;
};
WarpgroupLane warpgroup_lane(mlir::OpBuilder& b, mlir::Location l);

// Whether a target lowers `op` itself (the products, waits, barriers and swizzled stores) or every
// target shares expand_warpgroup_ops' version (the plain and bounded stores).
bool is_shared_warpgroup_store(WarpgroupOp op);

// Lowers every qv.warpgroup_store and _store_bounded (pairs of adjacent columns per thread; the
// bounded one element by element; every target) and,
// unless `keep_mma`, qv.warpgroup_store_swizzled the same way and qv.warpgroup_mma / _bt / wait
// with the portable fallback: each thread
// computes its own share from shared memory in k order (16 fused multiply-adds per element),
// and wait does nothing.
void expand_warpgroup_ops(mlir::ModuleOp module, bool keep_mma);

// Whether anything under `root` (a module, a kernel) calls a warpgroup product.
bool uses_warpgroup_mma(mlir::Operation* root);

}  // namespace quiver::ir
