// Warpgroup products on Hopper (sm_90a): each qv.warpgroup_mma is one
// wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T reading A and B from shared memory through
// matrix descriptors (PTX ISA, "Matrix Descriptor Format"); qv.warpgroup_wait is
// wgmma.commit_group + wgmma.wait_group; qv.warpgroup_store_swizzled is stmatrix.x4 (16-bit);
// qv.warpgroup_barrier is bar.sync 1 + warpgroup, 128. The neutral IR's accumulator share
// (ir/warpgroup.h) is already wgmma's register layout, so the N/2 floats pass through as they are.
// int8 products are wgmma...m64nNk32.s32.s8.s8 (K-major A and B only, no transpose or negation
// immediates; without .satfinite the s32 sums wrap, qv::dot4_i8's semantics), their N/2 int32s
// in the same registers; descriptors are byte-addressed, so the panel geometry is the same.
//
// Descriptors: start address (bits 0-13, address / 16), leading-dimension byte offset (16-29,
// / 16), stride-dimension byte offset (32-45, / 16), swizzle mode (62-63: 1 = 128-byte). Operands
// are 128-byte swizzled panels (include/quiver/kernel.h), so for K-major A and B^T the stride
// offset is 1024 (eight 128-byte rows) and the leading offset is unused (1); for B stored K x N
// (MN-major, wgmma's transposed B) the leading offset is the distance between 64-column panels
// and the stride offset again 1024 (eight rows of k).
//
// Ordering: shared memory written by threads (st.shared, cp.async) is read by wgmma through the
// async proxy, so in a kernel with warpgroup products every qv::barrier (and warpgroup
// barrier) is preceded by fence.proxy.async.shared::cta (the writers' side of the barrier). A
// zero accumulator (a product's first) is not read: scale-d false. Accumulator registers
// written by other instructions need wgmma.fence before the product reads them, emitted before
// a product unless the previous product-or-wait in its block is a product with only address
// arithmetic in between.
#include "targets/ptx/warpgroup_wgmma.h"

#include <string>

#include "ir/dialect/QvDialect.h"
#include "ir/warpgroup.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::ptx {

namespace {

using quiver::ir::WarpgroupOp;

mlir::LLVM::InlineAsmOp inline_asm(mlir::OpBuilder& b, mlir::Location l, mlir::Type result, mlir::ValueRange operands,
                                   const std::string& text, const std::string& constraints) {
  auto dialect = mlir::LLVM::AsmDialectAttr::get(b.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
  return b.create<mlir::LLVM::InlineAsmOp>(l, result, operands, text, constraints, /*has_side_effects=*/true,
                                           /*is_align_stack=*/false, dialect, /*operand_attrs=*/mlir::ArrayAttr());
}

class WgmmaLowering {
 public:
  explicit WgmmaLowering(mlir::Operation* op) : b_(op), l_(op->getLoc()), op_(op) {}

  void lower(WarpgroupOp op, bool needs_fence, bool commits = true) {
    mlir::ValueRange args = op_->getOperands();
    if (op == WarpgroupOp::StoreSwizzled) {
      store_swizzled(args);
    } else if (op == WarpgroupOp::Barrier) {   // named barrier 1 + warpgroup (0 is barrier()'s)
      mlir::Value linear = quiver::ir::linear_thread_id(b_, l_);
      mlir::Value id = b_.create<mlir::arith::AddIOp>(
          l_, b_.create<mlir::arith::ShRUIOp>(l_, linear, b_.create<mlir::arith::ConstantIndexOp>(l_, 7)),
          b_.create<mlir::arith::ConstantIndexOp>(l_, 1));
      mlir::Value id32 = b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getI32Type(), id);
      inline_asm(b_, l_, {}, {id32}, "fence.proxy.async.shared::cta;\n\tbar.sync $0, 128;", "r,~{memory}");
    } else if (op == WarpgroupOp::Commit) {
      inline_asm(b_, l_, {}, {}, "wgmma.commit_group.sync.aligned;", "~{memory}");
    } else if (op == WarpgroupOp::Wait) {
      uint32_t pending = llvm::cast<quiver::ir::qv::WarpgroupWaitOp>(op_).getPending();
      std::string text = std::string(commits ? "wgmma.commit_group.sync.aligned;\n\t" : "") +
                         "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";";
      inline_asm(b_, l_, {}, {}, text, "~{memory}");
    } else {
      if (needs_fence) inline_asm(b_, l_, {}, {}, "wgmma.fence.sync.aligned;", "~{memory}");
      bool bt = op == WarpgroupOp::MmaBT;
      mlir::Value a = descriptor(args[0], args[1], constant(1));
      mlir::Value bd = bt ? descriptor(args[2], args[3], constant(1))
                          : descriptor(args[2], args[3], panel_offset(args[4]));   // 16-bit only (front end)
      op_->getResult(0).replaceAllUsesWith(mma(a, bd, args[bt ? 4 : 5], !bt));
    }
    op_->erase();
  }

 private:
  mlir::Value constant(int64_t v) { return b_.create<mlir::arith::ConstantIntOp>(l_, v, 64); }
  // The leading offset of MN-major B: panel_stride elements of 2 bytes, in 16-byte units.
  mlir::Value panel_offset(mlir::Value panel_stride) {
    mlir::Value s = b_.create<mlir::arith::ExtUIOp>(l_, b_.getI64Type(), panel_stride);
    return b_.create<mlir::arith::ShRUIOp>(l_, s, constant(3));
  }

  // Shared-window addresses are below 228 KiB, so address / 16 fits the 14-bit field without a
  // mask, and the descriptor is a sum: fixed fields + base / 16 + offset bytes / 16 (offset in
  // elements: / 8 for 16-bit ones, / 16 for int8; a whole number of 16-byte chunks). A kernel's
  // products differ only in constant offsets, which LLVM then adds at each use to one descriptor
  // per operand base instead of keeping one per product.
  mlir::Value descriptor(mlir::Value mem, mlir::Value offset, mlir::Value leading) {
    mlir::Value base = b_.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(l_, mem);
    auto i64 = [&](mlir::Value v) -> mlir::Value { return b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getI64Type(), v); };
    mlir::Value fixed = b_.create<mlir::arith::OrIOp>(
        l_, constant((int64_t{1024 >> 4} << 32) | (int64_t{1} << 62)),
        b_.create<mlir::arith::ShLIOp>(l_, leading, constant(16)));
    mlir::Value start = b_.create<mlir::arith::ShRUIOp>(l_, i64(base), constant(4));
    unsigned bits = llvm::cast<mlir::MemRefType>(mem.getType()).getElementTypeBitWidth();
    mlir::Value at = b_.create<mlir::arith::ShRUIOp>(l_, i64(offset), constant(bits == 8 ? 4 : 3));
    return b_.create<mlir::arith::AddIOp>(l_, b_.create<mlir::arith::AddIOp>(l_, fixed, start), at);
  }

  mlir::Value mma(mlir::Value a_desc, mlir::Value b_desc, mlir::Value c, bool trans_b) {
    auto vt = llvm::cast<mlir::VectorType>(c.getType());
    int64_t regs = vt.getNumElements();
    bool int8 = vt.getElementType().isInteger(32);
    std::string type = element_name();
    std::string shape = "m64n" + std::to_string(2 * regs) + (int8 ? "k32.s32." : "k16.f32.");
    std::string text = "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $" + std::to_string(regs + 2) +
                       ", 0;\n\twgmma.mma_async.sync.aligned." + shape + type + "." + type + " {";
    std::string constraints;
    for (int64_t i = 0; i < regs; ++i) {
      text += (i ? "," : "") + std::string("$") + std::to_string(i);
      constraints += int8 ? "=r," : "=f,";
    }
    text += "}, $" + std::to_string(regs) + ", $" + std::to_string(regs + 1) + ", p" +
            (int8 ? std::string() : std::string(", 1, 1, 0, ") + (trans_b ? "1" : "0")) + ";\n}";
    constraints += "l,l,r";
    // A zero accumulator (a product's first, `qv::warpgroup_acc<float, N> s;`) is not read:
    // scale-d false makes the instruction write A x B, and the N / 2 zeroing moves go.
    bool zero = false;
    if (auto cst = c.getDefiningOp<mlir::arith::ConstantOp>())
      if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(cst.getValue()); dense && dense.isSplat())
        zero = int8 ? dense.getSplatValue<llvm::APInt>().isZero() : dense.getSplatValue<llvm::APFloat>().isPosZero();
    llvm::SmallVector<mlir::Value> operands{a_desc, b_desc, b_.create<mlir::arith::ConstantIntOp>(l_, zero ? 0 : 1, 32)};
    for (int64_t i = 0; i < regs && !zero; ++i) {
      operands.push_back(b_.create<mlir::vector::ExtractOp>(l_, c, i));
      constraints += "," + std::to_string(i);   // tied: the accumulator is read and written
    }
    llvm::SmallVector<mlir::Type> fields(regs, vt.getElementType());
    auto result = mlir::LLVM::LLVMStructType::getLiteral(b_.getContext(), fields);
    auto asm_op = inline_asm(b_, l_, result, operands, text, constraints);
    llvm::SmallVector<mlir::Value> out;
    for (int64_t i = 0; i < regs; ++i)
      out.push_back(b_.create<mlir::LLVM::ExtractValueOp>(l_, asm_op.getResult(0), llvm::ArrayRef<int64_t>{i}));
    return b_.create<mlir::vector::FromElementsOp>(l_, vt, out);
  }

  // C as 16-bit values into swizzled panels with stmatrix.x4 (sm_90): one instruction stores the
  // 8 x 8 blocks (rows 8h of the warp's 16, columns 8i) for h = 0, 1 and i = 2p, 2p + 1: from each
  // lane the pairs of its elements 8p .. 8p + 7 in order (the accumulator's pairs are those
  // blocks' fragments), and lane l gives the address of row l % 8 of block l / 8. Addresses:
  // a thread keeps one per instruction, where pair stores kept one per pair.
  void store_swizzled(mlir::ValueRange args) {
    auto vt = llvm::cast<mlir::VectorType>(args[3].getType());
    mlir::Type elem = llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType();
    auto index = [&](int64_t v) -> mlir::Value { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); };
    auto add = [&](mlir::Value x, mlir::Value y) -> mlir::Value { return b_.create<mlir::arith::AddIOp>(l_, x, y); };
    auto band = [&](mlir::Value x, int64_t m) -> mlir::Value { return b_.create<mlir::arith::AndIOp>(l_, x, index(m)); };
    auto shr = [&](mlir::Value x, int64_t n) -> mlir::Value { return b_.create<mlir::arith::ShRUIOp>(l_, x, index(n)); };
    mlir::Value lane = b_.create<mlir::gpu::LaneIdOp>(l_, mlir::IntegerAttr());
    mlir::Value warp = band(shr(quiver::ir::linear_thread_id(b_, l_), 5), 3);
    mlir::Value rr = band(lane, 7), block = shr(lane, 3);   // row in its block, block 0..3
    mlir::Value h = band(block, 1), i_hi = shr(block, 1);
    // row = 16 warp + 8 h + rr (rr is row % 8)
    mlir::Value row = add(b_.create<mlir::arith::MulIOp>(l_, warp, index(16)), add(b_.create<mlir::arith::MulIOp>(l_, h, index(8)), rr));
    mlir::Value stride = b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), args[2]);
    mlir::Value base = b_.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(l_, args[0]);
    auto shared_ptr = mlir::LLVM::LLVMPointerType::get(b_.getContext(), 3);
    mlir::Type i32 = b_.getI32Type();
    for (int64_t p = 0; p < vt.getNumElements() / 8; ++p) {
      mlir::Value chunk = add(i_hi, index(2 * p));   // column block (of 8) this lane addresses
      mlir::Value panel = b_.create<mlir::arith::MulIOp>(l_, shr(chunk, 3), stride);
      mlir::Value swz = b_.create<mlir::arith::ShLIOp>(
          l_, b_.create<mlir::arith::XOrIOp>(l_, band(chunk, 7), rr), index(3));
      mlir::Value at = add(add(args[1], panel), add(b_.create<mlir::arith::MulIOp>(l_, row, index(64)), swz));
      mlir::Value bytes = add(base, b_.create<mlir::arith::MulIOp>(l_, at, index(2)));
      mlir::Value ptr = b_.create<mlir::LLVM::IntToPtrOp>(
          l_, shared_ptr, b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getI64Type(), bytes));
      llvm::SmallVector<mlir::Value> operands{ptr};
      for (int64_t j = 0; j < 4; ++j) {
        mlir::Value pair = b_.create<mlir::vector::FromElementsOp>(
            l_, mlir::VectorType::get({2}, b_.getF32Type()),
            mlir::ValueRange{b_.create<mlir::vector::ExtractOp>(l_, args[3], 8 * p + 2 * j).getResult(),
                             b_.create<mlir::vector::ExtractOp>(l_, args[3], 8 * p + 2 * j + 1).getResult()});
        mlir::Value half2 = b_.create<mlir::arith::TruncFOp>(l_, mlir::VectorType::get({2}, elem), pair);
        operands.push_back(b_.create<mlir::vector::BitCastOp>(l_, mlir::VectorType::get({1}, i32), half2));
        operands.back() = b_.create<mlir::vector::ExtractOp>(l_, operands.back(), 0);
      }
      inline_asm(b_, l_, {}, operands, "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};",
                 "l,r,r,r,r,~{memory}");
    }
  }

  std::string element_name() {
    mlir::Type e = llvm::cast<mlir::MemRefType>(op_->getOperand(0).getType()).getElementType();
    return e.isBF16() ? "bf16" : e.isInteger(8) ? "s8" : "f16";
  }

  mlir::OpBuilder b_;
  mlir::Location l_;
  mlir::Operation* op_;
};

std::optional<WarpgroupOp> warpgroup_call(mlir::Operation* op) { return quiver::ir::warpgroup_op_of(op); }
bool is_product(std::optional<WarpgroupOp> op) {
  return op && (*op == WarpgroupOp::Mma || *op == WarpgroupOp::MmaBT);
}

// Whether the product `product` follows another product in its block with nothing between them
// but side-effect-free operations (descriptor arithmetic): then no wgmma.fence is needed.
bool follows_product(mlir::Operation* product) {
  for (mlir::Operation* op = product->getPrevNode(); op; op = op->getPrevNode()) {
    if (llvm::isa<mlir::func::CallOp>(op) || warpgroup_call(op)) return is_product(warpgroup_call(op));
    if (!mlir::isMemoryEffectFree(op) || op->getNumRegions() != 0) return false;
  }
  return false;
}

bool holds_warpgroup_op(mlir::Operation* op) {
  return op->walk([](mlir::Operation* inner) {
               return warpgroup_call(inner) ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
             }).wasInterrupted();
}
// Whether every block in `op`'s regions closes the products it starts (a commit or wait after
// the last one) and no deeper region holds warpgroup operations: then no product started in
// `op` is open after it, however often its blocks run.
bool closes_its_products(mlir::Operation* op) {
  for (mlir::Region& region : op->getRegions())
    for (mlir::Block& block : region) {
      bool open = false;
      for (mlir::Operation& inner : block) {
        if (inner.getNumRegions() != 0 && holds_warpgroup_op(&inner)) return false;
        auto kind = warpgroup_call(&inner);
        if (is_product(kind)) open = true;
        else if (kind && (*kind == WarpgroupOp::Commit || *kind == WarpgroupOp::Wait)) open = false;
      }
      if (open) return false;
    }
  return true;
}

// Whether a product started on some path to `wait` is not yet in a batch: the wait must close it
// (wgmma.commit_group). Where every path back from the wait meets a warpgroup_commit or another
// wait first (or the kernel's start: functions are inlined), it does not: a second commit there
// would close an empty batch after unrelated code, where ptxas injects warpgroup fences. Nested
// regions (scf.if, scf.while) that close their own products are passed over; one around the
// wait is left through its parent op if it is an scf.if; anything else counts as open.
bool has_uncommitted_product(mlir::Operation* wait) {
  llvm::SmallVector<mlir::Operation*> work{wait};   // scan backwards from (excluding) each
  llvm::SmallPtrSet<mlir::Block*, 16> seen;
  while (!work.empty()) {
    mlir::Operation* from = work.pop_back_val();
    mlir::Block* block = from->getBlock();
    bool closed = false;
    for (mlir::Operation* op = from->getPrevNode(); op && !closed; op = op->getPrevNode()) {
      if (op->getNumRegions() != 0) {
        if (holds_warpgroup_op(op) && !closes_its_products(op)) return true;
        continue;
      }
      auto kind = warpgroup_call(op);
      if (is_product(kind)) return true;
      if (kind && (*kind == WarpgroupOp::Commit || *kind == WarpgroupOp::Wait)) closed = true;
    }
    if (closed) continue;
    if (block->isEntryBlock()) {
      mlir::Operation* parent = block->getParentOp();
      if (llvm::isa<mlir::FunctionOpInterface>(parent)) continue;   // the kernel's start
      if (!llvm::isa<mlir::scf::IfOp>(parent)) return true;
      work.push_back(parent);
      continue;
    }
    for (mlir::Block* pred : block->getPredecessors())
      if (seen.insert(pred).second) work.push_back(pred->getTerminator());
  }
  return false;
}

}  // namespace

void lower_warpgroup_to_wgmma(mlir::ModuleOp module) {
  llvm::SmallVector<std::pair<mlir::Operation*, WarpgroupOp>> calls;
  module.walk([&](mlir::Operation* inner) {
    auto op = quiver::ir::warpgroup_op_of(inner);
    if (op && !quiver::ir::is_shared_warpgroup_store(*op)) calls.push_back({inner, *op});
  });
  if (calls.empty()) return;
  llvm::SmallVector<bool> fence;
  llvm::SmallVector<bool> commit;
  for (auto [call, op] : calls) {
    fence.push_back(is_product(op) && !follows_product(call));
    commit.push_back(op != WarpgroupOp::Wait || has_uncommitted_product(call));
  }
  llvm::SmallPtrSet<mlir::Operation*, 8> kernels;
  for (auto [call, op] : calls) kernels.insert(call->getParentOfType<mlir::func::FuncOp>());
  for (mlir::Operation* fn : kernels)
    fn->walk([&](mlir::gpu::BarrierOp barrier) {
      mlir::OpBuilder b(barrier);
      inline_asm(b, barrier.getLoc(), {}, {}, "fence.proxy.async.shared::cta;", "~{memory}");
    });
  for (size_t i = 0; i < calls.size(); ++i)
    WgmmaLowering(calls[i].first).lower(calls[i].second, fence[i], commit[i]);
}

}  // namespace quiver::compiler::ptx
