// Matrix tiles on NVIDIA tensor cores: each 16x16x16 qv::mma is two mma.sync.m16n8k16 (sm_80+),
// and a tile value becomes the 8 elements one lane holds in those instructions' fragments
// (PTX ISA, "Matrix Fragments for mma.m16n8k16"). With g = lane / 4 and t = lane % 4, lane
// element p of a tile is:
//   A (16x16, M x K):  p = 2q + s, q = 0..3:  row g + 8 (q & 1), column 2t + s + 8 (q >> 1)
//   B (16x16, K x N):  p = 4h + 2q + s:       row 2t + s + 8q,  column 8h + g   (h: the n8 half)
//   C (16x16 float):   p = 4h + 2r + s:       row g + 8r,       column 8h + 2t + s
// so A, B^T (stored N x K) and C move in pairs of adjacent elements: one 4-byte (8-byte for
// float) access each; B stored K x N is gathered element by element.
//
// From shared memory the 16-bit tiles come with one ldmatrix.x4 instead (sm_75+): it reads four
// 8x8 matrices, lane l giving the address of row l % 8 of matrix l / 8, and hands lane l row
// l / 4, columns 2 (l % 4) + {0, 1} of each (".trans": that column pair of row l / 4 of the
// transpose). Matrix j lands in the lane's elements 2j, 2j + 1, which the orders above make
// A's 8x8 blocks (rows 8 (j & 1), columns 8 (j >> 1)), B^T's (stored rows 8 (j >> 1), columns
// 8 (j & 1)) and, transposed, B's (rows 8 (j & 1), columns 8 (j >> 1)). docs/matrix.md's
// contract (16-byte aligned tile, stride a multiple of 8) is what ldmatrix needs of each row.
//
// int8 tiles (16x16x32) are two mma.sync.m16n8k32.s32.s8.s8.s32 (PTX ISA, "Matrix Fragments for
// mma.m16n8k32"). Their fragments hold the same bytes where the 16-bit ones do — A's register q
// is row g + 8 (q & 1), bytes 4t .. 4t + 3 + 16 (q >> 1); B^T's register 2h + q is stored row
// 8h + g, bytes 4t + 16q ..; C is the float layout with int32 — so a lane holds 16 elements of
// A or B in groups of 4 where a 16-bit tile has groups of 2:
//   A (16x32):  p = 4q + s:        row g + 8 (q & 1), column 4t + s + 16 (q >> 1)
//   B (32x16):  p = 8h + 4q + s:   row 4t + s + 16q,  column 8h + g
// and ldmatrix (b16 rows of 16 bytes) loads A and B^T from shared memory unchanged. B stored
// K x N has no 8-bit ldmatrix.trans before sm_100: it is gathered byte by byte, from shared
// memory too. int8 tiles need 16-byte rows for ldmatrix: stride a multiple of 16.
#include "targets/ptx/matrix_mma_sync.h"

#include "ir/matrix.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::ptx {

namespace {

using quiver::ir::MatrixOp;
// A lane's share: 8 elements of a 16-bit or accumulator tile, 16 of an int8 operand.
constexpr int64_t kLanes = 32;

int64_t byte_width(mlir::Type t) { return t.getIntOrFloatBitWidth() / 8; }

class MmaSyncLowering {
 public:
  explicit MmaSyncLowering(mlir::Operation* call) : b_(call), l_(call->getLoc()), call_(call) {
    lane_ = b_.create<mlir::gpu::LaneIdOp>(l_, mlir::IntegerAttr());
    mlir::Value lane = lane_;
    g_ = b_.create<mlir::arith::ShRUIOp>(l_, lane, index(2));
    t_ = b_.create<mlir::arith::AndIOp>(l_, lane, index(3));
  }

  void lower(MatrixOp op) {
    mlir::ValueRange args = call_->getOperands();
    // ldmatrix moves 16-bit elements (.trans too): B stored K x N of int8 is gathered instead.
    bool ldmatrix = op == MatrixOp::LoadA || op == MatrixOp::LoadBT ||
                    (op == MatrixOp::LoadB && !element(args).isInteger(8));
    if (ldmatrix && in_shared(args[0])) {
      replace(load_ldmatrix(args, op));
      call_->erase();
      return;
    }
    switch (op) {
      case MatrixOp::LoadA: replace(load_pairs(args, [](int q) { return std::pair{q & 1, q >> 1}; }, false)); break;
      case MatrixOp::LoadBT: replace(load_pairs(args, [](int q) { return std::pair{q >> 1, q & 1}; }, true)); break;
      case MatrixOp::LoadAcc: replace(load_pairs(args, [](int q) { return std::pair{q & 1, q >> 1}; }, false, true)); break;
      case MatrixOp::LoadB: replace(load_b(args)); break;
      case MatrixOp::Store: store(args); break;
      case MatrixOp::Mma: replace(mma(args[0], args[1], args[2])); break;
      case MatrixOp::RowMax: replace(row_reduce(args[0], true)); break;
      case MatrixOp::RowSum: replace(row_reduce(args[0], false)); break;
      case MatrixOp::ToA:   // C's and A's lane orders are the same (top of the file): convert in place
        replace(b_.create<mlir::arith::TruncFOp>(l_, call_->getResult(0).getType(), args[0]));
        break;
    }
    call_->erase();
  }

 private:
  mlir::Value index(int64_t v) { return b_.create<mlir::arith::ConstantIndexOp>(l_, v); }
  mlir::Value add(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AddIOp>(l_, a, c); }
  mlir::Value mul(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::MulIOp>(l_, a, c); }
  mlir::Value stride(mlir::ValueRange args) {
    return b_.create<mlir::arith::IndexCastUIOp>(l_, b_.getIndexType(), args[2]);
  }
  // off + row * stride + col
  mlir::Value at(mlir::ValueRange args, mlir::Value row, mlir::Value col) {
    return add(args[1], add(mul(row, stride(args)), col));
  }
  mlir::Type element(mlir::ValueRange args) { return llvm::cast<mlir::MemRefType>(args[0].getType()).getElementType(); }

  // Group q (of four) of A / C: row g + 8 * rq, column wt + 4w * cq, w elements (w = 2 for
  // 16-bit inputs and for 4-byte accumulators, 4 for int8). Of B^T (stored N x K): stored row
  // (= column of B) g + 8 * rq, stored column wt + 4w * cq, with the group's order
  // p = w (2 rq + cq). A's groups are in q order (rq = q & 1, cq = q >> 1), C's in
  // p = w (2 cq + rq) order, which `acc_order` selects.
  template <typename Pos>
  mlir::Value load_pairs(mlir::ValueRange args, Pos pos, bool bt, bool acc_order = false) {
    mlir::Type elem = element(args);
    int64_t w = acc_order ? 2 : 4 / byte_width(elem);
    auto group_type = mlir::VectorType::get({w}, elem);
    llvm::SmallVector<mlir::Value> elems(4 * w);
    for (int q = 0; q < 4; ++q) {
      auto [rq, cq] = pos(q);
      mlir::Value row = add(g_, index(8 * rq));
      mlir::Value col = add(mul(t_, index(w)), index(4 * w * cq));
      mlir::Value group = b_.create<mlir::vector::LoadOp>(l_, group_type, args[0], mlir::ValueRange{at(args, row, col)});
      int64_t p = w * (bt ? 2 * rq + cq : acc_order ? 2 * cq + rq : q);
      for (int64_t s = 0; s < w; ++s) elems[p + s] = b_.create<mlir::vector::ExtractOp>(l_, group, s);
    }
    return b_.create<mlir::vector::FromElementsOp>(l_, mlir::VectorType::get({4 * w}, elem), elems);
  }

  static bool in_shared(mlir::Value memref) {
    auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(
        llvm::cast<mlir::MemRefType>(memref.getType()).getMemorySpace());
    return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
  }

  // One ldmatrix.x4 (.trans for B stored K x N); see the top of the file for the lane mapping.
  mlir::Value load_ldmatrix(mlir::ValueRange args, MatrixOp op) {
    mlir::Value j = b_.create<mlir::arith::ShRUIOp>(l_, lane_, index(3));
    mlir::Value r = b_.create<mlir::arith::AndIOp>(l_, lane_, index(7));
    mlir::Value j_low = b_.create<mlir::arith::AndIOp>(l_, j, index(1));
    mlir::Value j_high = b_.create<mlir::arith::ShRUIOp>(l_, j, index(1));
    bool rows_by_high = op == MatrixOp::LoadBT;
    mlir::Type elem = element(args);
    int64_t row_elements = 16 / byte_width(elem);   // one 16-byte row of an 8x8 b16 matrix
    mlir::Value row = add(r, mul(rows_by_high ? j_high : j_low, index(8)));
    mlir::Value col = mul(rows_by_high ? j_low : j_high, index(row_elements));
    auto i64 = b_.getI64Type();
    mlir::Value base = b_.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(l_, args[0]);
    mlir::Value bytes = add(base, mul(at(args, row, col), index(byte_width(elem))));
    mlir::Value address = b_.create<mlir::arith::IndexCastUIOp>(l_, i64, bytes);
    auto shared_ptr = mlir::LLVM::LLVMPointerType::get(b_.getContext(), /*addressSpace=*/3);
    mlir::Value ptr = b_.create<mlir::LLVM::IntToPtrOp>(l_, shared_ptr, address);
    mlir::Type i32 = b_.getI32Type();
    auto words_struct = mlir::LLVM::LLVMStructType::getLiteral(b_.getContext(), {i32, i32, i32, i32});
    auto layout = op == MatrixOp::LoadB ? mlir::NVVM::MMALayout::col : mlir::NVVM::MMALayout::row;
    mlir::Value loaded = b_.create<mlir::NVVM::LdMatrixOp>(l_, words_struct, ptr, 4u, layout);
    llvm::SmallVector<mlir::Value> words;
    for (int64_t i = 0; i < 4; ++i)
      words.push_back(b_.create<mlir::LLVM::ExtractValueOp>(l_, loaded, llvm::ArrayRef<int64_t>{i}));
    mlir::Value vec = b_.create<mlir::vector::FromElementsOp>(l_, mlir::VectorType::get({4}, i32), words);
    return b_.create<mlir::vector::BitCastOp>(l_, mlir::VectorType::get({row_elements}, elem), vec);
  }

  // B stored K x N: element p = 2wh + wq + s is (wt + s + 4wq, 8h + g) with w = 2 (16-bit) or
  // 4 (int8), gathered.
  mlir::Value load_b(mlir::ValueRange args) {
    int64_t w = 4 / byte_width(element(args));
    llvm::SmallVector<mlir::Value> elems;
    for (int h = 0; h < 2; ++h)
      for (int q = 0; q < 2; ++q)
        for (int64_t s = 0; s < w; ++s) {
          mlir::Value row = add(mul(t_, index(w)), index(s + 4 * w * q));
          mlir::Value col = add(g_, index(8 * h));
          elems.push_back(b_.create<mlir::memref::LoadOp>(l_, args[0], at(args, row, col)));
        }
    return b_.create<mlir::vector::FromElementsOp>(l_, mlir::VectorType::get({4 * w}, element(args)), elems);
  }

  void store(mlir::ValueRange args) {
    mlir::Type elem = element(args);
    mlir::Type acc = llvm::cast<mlir::VectorType>(args[3].getType()).getElementType();
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 2; ++r) {
        int p = 4 * h + 2 * r;
        mlir::Value pair = b_.create<mlir::vector::FromElementsOp>(
            l_, mlir::VectorType::get({2}, acc),
            mlir::ValueRange{b_.create<mlir::vector::ExtractOp>(l_, args[3], p).getResult(),
                             b_.create<mlir::vector::ExtractOp>(l_, args[3], p + 1).getResult()});
        if (elem != acc) pair = b_.create<mlir::arith::TruncFOp>(l_, mlir::VectorType::get({2}, elem), pair);
        mlir::Value row = add(g_, index(8 * r));
        mlir::Value col = add(mul(t_, index(2)), index(8 * h));
        b_.create<mlir::vector::StoreOp>(l_, pair, args[0], mlir::ValueRange{at(args, row, col)});
      }
  }

  // Two mma.sync (columns 0-7 and 8-15 of C): m16n8k16 with f32 accumulators for 16-bit
  // inputs, m16n8k32 with s32 accumulators (exact products, wrapping sums) for int8.
  mlir::Value mma(mlir::Value a, mlir::Value bm, mlir::Value c) {
    mlir::Type elem = llvm::cast<mlir::VectorType>(a.getType()).getElementType();
    bool int8 = elem.isInteger(8);
    std::string shape = int8 ? "m16n8k32" : "m16n8k16";
    std::string type = int8 ? "s8" : elem.isBF16() ? "bf16" : "f16";
    std::string acc = int8 ? "s32" : "f32";
    auto words = mlir::VectorType::get({4}, b_.getI32Type());
    mlir::Value aw = b_.create<mlir::vector::BitCastOp>(l_, words, a);
    mlir::Value bw = b_.create<mlir::vector::BitCastOp>(l_, words, bm);
    mlir::Type c_elem = llvm::cast<mlir::VectorType>(c.getType()).getElementType();
    auto result = mlir::LLVM::LLVMStructType::getLiteral(b_.getContext(), {c_elem, c_elem, c_elem, c_elem});
    auto dialect = mlir::LLVM::AsmDialectAttr::get(b_.getContext(), mlir::LLVM::AsmDialect::AD_ATT);
    std::string text = "mma.sync.aligned." + shape + ".row.col." + acc + "." + type + "." + type + "." + acc +
                       " {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
    std::string constraints = int8 ? "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r" : "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
    llvm::SmallVector<mlir::Value> out;
    for (int h = 0; h < 2; ++h) {
      llvm::SmallVector<mlir::Value> operands;
      for (int i = 0; i < 4; ++i) operands.push_back(b_.create<mlir::vector::ExtractOp>(l_, aw, i));
      for (int i = 0; i < 2; ++i) operands.push_back(b_.create<mlir::vector::ExtractOp>(l_, bw, 2 * h + i));
      for (int i = 0; i < 4; ++i) operands.push_back(b_.create<mlir::vector::ExtractOp>(l_, c, 4 * h + i));
      auto asm_op = b_.create<mlir::LLVM::InlineAsmOp>(l_, result, operands, text, constraints,
                                                       /*has_side_effects=*/false, /*is_align_stack=*/false, dialect,
                                                       /*operand_attrs=*/mlir::ArrayAttr());
      for (int64_t i = 0; i < 4; ++i)
        out.push_back(b_.create<mlir::LLVM::ExtractValueOp>(l_, asm_op.getResult(0), llvm::ArrayRef<int64_t>{i}));
    }
    return b_.create<mlir::vector::FromElementsOp>(l_, c.getType(), out);
  }

  // A lane holds columns 2t, 2t + 1, 8 + 2t, 8 + 2t + 1 of rows g (elements 0, 1, 4, 5) and g + 8
  // (2, 3, 6, 7); the other three quarters of each row are in the lanes with the same g, i.e.
  // lane ^ 1 and lane ^ 2. Every lane ends with the same value, combined in the same order.
  mlir::Value row_reduce(mlir::Value c, bool max) {
    auto combine = [&](mlir::Value x, mlir::Value y) -> mlir::Value {
      return max ? b_.create<mlir::arith::MaxNumFOp>(l_, x, y).getResult()
                 : b_.create<mlir::arith::AddFOp>(l_, x, y).getResult();
    };
    auto elem = [&](int64_t p) -> mlir::Value { return b_.create<mlir::vector::ExtractOp>(l_, c, p); };
    mlir::Value width = b_.create<mlir::arith::ConstantIntOp>(l_, 32, 32);
    mlir::Value rows[2];
    for (int r = 0; r < 2; ++r) {
      mlir::Value v = combine(combine(elem(2 * r), elem(2 * r + 1)), combine(elem(4 + 2 * r), elem(5 + 2 * r)));
      for (int64_t mask : {1, 2}) {
        mlir::Value m = b_.create<mlir::arith::ConstantIntOp>(l_, mask, 32);
        mlir::Value other = b_.create<mlir::gpu::ShuffleOp>(l_, v, m, width, mlir::gpu::ShuffleMode::XOR).getShuffleResult();
        v = combine(v, other);   // a + b == b + a: lane and partner end with the same bits
      }
      rows[r] = v;
    }
    return b_.create<mlir::vector::FromElementsOp>(
        l_, c.getType(), mlir::ValueRange{rows[0], rows[0], rows[1], rows[1], rows[0], rows[0], rows[1], rows[1]});
  }

  void replace(mlir::Value v) { call_->getResult(0).replaceAllUsesWith(v); }

  mlir::OpBuilder b_;
  mlir::Location l_;
  mlir::Operation* call_;
  mlir::Value lane_, g_, t_;
};

}  // namespace

void lower_matrix_to_mma_sync(mlir::ModuleOp module) {
  llvm::SmallVector<std::pair<mlir::Operation*, MatrixOp>> calls;
  module.walk([&](mlir::Operation* op) {
    if (auto kind = quiver::ir::matrix_op_of(op)) calls.push_back({op, *kind});
  });
  if (calls.empty()) return;
  for (mlir::func::FuncOp fn : module.getOps<mlir::func::FuncOp>())
    if (!fn.isExternal())
      quiver::ir::retype_matrix_values(
          fn, [](mlir::VectorType t) { return mlir::VectorType::get({t.getNumElements() / kLanes}, t.getElementType()); });
  for (auto [call, op] : calls) MmaSyncLowering(call).lower(op);
}

}  // namespace quiver::compiler::ptx
