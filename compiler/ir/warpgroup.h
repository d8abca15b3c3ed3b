// Warpgroup intrinsics of the neutral IR (docs/matrix.md "Warpgroups", docs/ir.md).
//
// A qv::warpgroup_acc<float, N> (64 x N floats held by 128 threads) is, in the neutral IR, one
// thread's share: vector<N/2 x f32>, in the layout of Hopper's wgmma accumulators, which every
// target keeps. With w = (linear thread id % 128) / 32, g = lane / 4, q = lane % 4, element
// 4i + 2h + s of the share (i < N/8, h, s < 2) is C[16w + g + 8h][8i + 2q + s]. So element-wise
// arithmetic stays element-wise and only these calls need a target's attention:
//   qv.warpgroup_mma.<A>.<B>.n<N>    (memref a, index a_off, memref b, index b_off, i32 panel_stride,
//                                     vector<N/2xf32> c) -> vector<N/2xf32>     B stored K x N (rows of N)
//   qv.warpgroup_mma_bt.<A>.<B>.n<N> (memref a, index a_off, memref bt, index bt_off,
//                                     vector<N/2xf32> c) -> vector<N/2xf32>     B stored N x K
//   qv.warpgroup_wait                (i32 pending)
//   qv.warpgroup_barrier             ()                     the fallback: gpu.barrier
//   qv.warpgroup_store.<U>.n<N>      (memref p, index off, i32 stride, vector<N/2xf32> c)
//   qv.warpgroup_store_bounded.<U>.n<N> (memref p, index off, i32 stride, vector<N/2xf32> c,
//                                     i32 rows, i32 cols)      only C[i][j] with i < rows, j < cols
//   qv.warpgroup_store_swizzled.<U>.n<N> (memref p, index off, i32 panel_stride, vector<N/2xf32> c)
// <A>, <B>, <U> name the memory operand (ir/matrix.h's tags: "s4096.bf16", "g.f32"). The operand
// layout (swizzled 128-byte panels) is include/quiver/kernel.h's.
// int8 products: <A>, <B> are i8 memory ("s16384.i8"), the share is vector<N/2 x i32> (the same
// layout: wgmma's s32 accumulators sit as its f32 ones), only _bt (8-bit wgmma is K-major only),
// and a qv.warpgroup_store of such a share goes to i32 memory unconverted.
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

std::string warpgroup_intrinsic_name(WarpgroupOp op, mlir::TypeRange operands);
std::optional<WarpgroupOp> warpgroup_op_of(llvm::StringRef callee);

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
// and wait does nothing. Drops the declarations it no longer needs.
void expand_warpgroup_ops(mlir::ModuleOp module, bool keep_mma);

// Whether anything under `root` (a module, a kernel) calls a warpgroup product.
bool uses_warpgroup_mma(mlir::Operation* root);

}  // namespace quiver::ir
