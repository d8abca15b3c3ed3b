#include "targets/spirv/matrix_coop.h"

#include "ir/block_tiles.h"
#include "ir/dialect/QvDialect.h"
#include "ir/matrix.h"
#include "ir/passes.h"
#include "targets/spirv/matrix_coop_lanes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVTypes.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

using ir::MatrixOp;

mlir::Type memory_element(mlir::Value memref) {
  return llvm::cast<mlir::MemRefType>(memref.getType()).getElementType();
}
mlir::Type tile_element(mlir::Value tile) { return llvm::cast<mlir::VectorType>(tile.getType()).getElementType(); }

std::string describe(mlir::Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return "'" + op->getName().getStringRef().str() + "' at " + s;
}

// Why this matrix intrinsic has no cooperative-matrix form ("" when it has one).
std::string call_unsupported(mlir::Operation* call, MatrixOp op) {
  mlir::ValueRange args = call->getOperands();
  switch (op) {
    case MatrixOp::LoadA:
    case MatrixOp::LoadB:
    case MatrixOp::LoadBT: {
      mlir::Type e = memory_element(args[0]);
      return e.isF16() || e.isInteger(8) ? "" : "tiles of bf16 (the device reports half and int8 tiles only)";
    }
    case MatrixOp::LoadAcc: return "";
    case MatrixOp::Store: {
      mlir::Type e = memory_element(args[0]);
      return e.isF32() || e.isF16() || e.isInteger(32) ? "" : "a store of a tile to bf16 memory";
    }
    case MatrixOp::Mma: {
      mlir::Type e = tile_element(args[0]);
      return e.isF16() || e.isInteger(8) ? "" : "products of bf16 tiles";
    }
    case MatrixOp::RowMax: return "qv::row_max (no cooperative-matrix reduction in SPV_KHR_cooperative_matrix)";
    case MatrixOp::RowSum: return "qv::row_sum (no cooperative-matrix reduction in SPV_KHR_cooperative_matrix)";
    case MatrixOp::ToA: return "qv::to_matrix_a (an accumulator cannot become a left operand in SPV_KHR_cooperative_matrix)";
  }
  return "an unknown matrix operation";
}

// A value this lowering makes a cooperative matrix: a subgroup tile or a block tile.
bool is_coop_value_type(mlir::Type t) { return ir::is_tile_type(t) || ir::is_block_tile_type(t); }

// Element-wise operations cooperative matrices take (component-wise instructions), besides
// splat constants.
bool coop_elementwise(mlir::Operation* op) {
  return llvm::isa<mlir::cf::BranchOp, mlir::cf::CondBranchOp, mlir::vector::BroadcastOp, mlir::vector::SplatOp,
                   mlir::arith::AddFOp, mlir::arith::SubFOp, mlir::arith::MulFOp, mlir::arith::DivFOp,
                   mlir::arith::NegFOp, mlir::arith::AddIOp, mlir::arith::SubIOp, mlir::ub::PoisonOp>(op);
}

bool splat_constant(mlir::Operation* op) {
  auto c = llvm::dyn_cast<mlir::arith::ConstantOp>(op);
  auto dense = c ? llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat();
}

bool touches_tiles(mlir::Operation* op) {
  return llvm::any_of(op->getOperandTypes(), ir::is_matrix_type) ||
         llvm::any_of(op->getResultTypes(), ir::is_matrix_type);
}

// A scalar broadcast to a whole tile (constants included), or null.
mlir::Value splat_source(mlir::Value tile) {
  mlir::Operation* def = tile.getDefiningOp();
  if (auto b = llvm::dyn_cast_or_null<mlir::vector::BroadcastOp>(def)) return b.getSource();
  if (auto s = llvm::dyn_cast_or_null<mlir::vector::SplatOp>(def)) return s.getInput();
  return {};
}

}  // namespace

bool coop_lowerable(mlir::func::FuncOp fn, std::string& why) {
  bool any_tile = false;
  fn.walk([&](mlir::Operation* op) {
    if (!why.empty()) return;
    if (auto m = ir::matrix_op_of(op)) {
      any_tile = true;
      if (std::string reason = call_unsupported(op, *m); !reason.empty()) why = reason + " (" + describe(op) + ")";
      return;
    }
    if (!touches_tiles(op)) return;
    any_tile = true;
    if (coop_elementwise(op) || splat_constant(op)) return;
    // An int32 accumulator to a float one: OpConvertSToF, component-wise (both MatrixAccumulator).
    if (llvm::isa<mlir::arith::SIToFPOp>(op)) return;
    why = "element-wise " + describe(op) + " on a tile (cooperative matrices take + - * / only)";
  });
  if (!any_tile && why.empty()) why = "it uses no matrix tiles";
  return why.empty();
}

bool block_coop_lowerable(mlir::func::FuncOp fn, std::string& why) {
  bool any = false;
  fn.walk([&](mlir::Operation* op) {
    if (!why.empty()) return;
    if (auto b = ir::block_op_of(op)) {
      any = true;
      mlir::ValueRange args = op->getOperands();
      // Half or int8 operands (bf16 needs a SPIR-V bfloat16 type MLIR 19 lacks); stores of float
      // accumulators to float or half, of int32 ones to int32.
      auto half_or_int8 = [](mlir::Type a, mlir::Type b) { return a == b && (a.isF16() || a.isInteger(8)); };
      mlir::Type m0 = memory_element(args[0]);
      bool ok = *b == ir::BlockOp::Store  ? m0.isF32() || m0.isF16() || m0.isInteger(32)
                : *b == ir::BlockOp::Load ? m0.isF32() || m0.isInteger(32)
                                          : half_or_int8(memory_element(args[1]), memory_element(args[4]));
      if (!ok) why = "bf16 block tiles (no bf16 cooperative matrices in this image) (" + describe(op) + ")";
      return;
    }
    bool block = llvm::any_of(op->getOperandTypes(), ir::is_block_tile_type) ||
                 llvm::any_of(op->getResultTypes(), ir::is_block_tile_type);
    if (!block) return;
    any = true;
    if (!coop_elementwise(op) && !splat_constant(op))
      why = "element-wise " + describe(op) + " on a block tile (cooperative matrices take + - * / only)";
  });
  if (!any && why.empty()) why = "it uses no block tiles";
  return why.empty();
}

std::vector<std::string> block_coop_requirements(llvm::ArrayRef<mlir::func::FuncOp> kernels) {
  std::vector<std::string> out;
  if (kernels.empty()) return out;
  out = {"extension:VK_KHR_cooperative_matrix", "extension:VK_NV_cooperative_matrix2",
         "feature:cooperativeMatrixWorkgroupScope", "feature:cooperativeMatrixFlexibleDimensions"};
  bool half = false;
  for (mlir::func::FuncOp fn : kernels) {
    auto block = fn->getAttrOfType<mlir::DenseI32ArrayAttr>("qv.block");
    int64_t threads = block ? int64_t(block[0]) * block[1] * block[2] : 0;
    fn.walk([&](mlir::Operation* call) {
      auto b = ir::block_op_of(call);
      if (!b || !ir::is_block_product(*b)) return;
      auto tile = llvm::cast<mlir::VectorType>(call->getResult(0).getType());
      const bool int8 = tile.getElementType().isInteger(32);
      half = half || !int8;
      const char* types = int8 ? ":i8*i8+i32:" : ":f16*f16+f32:";
      std::string r = "cooperative_matrix_workgroup:" + std::to_string(tile.getDimSize(0)) + "x" +
                      std::to_string(tile.getDimSize(1)) + "x" + std::to_string(ir::block_product_depth(call)) +
                      types + std::to_string(threads);
      if (!llvm::is_contained(out, r)) out.push_back(r);
    });
  }
  if (half) out.push_back("feature:shaderFloat16");
  out.push_back("feature:vulkanMemoryModel");
  return out;
}

void mark_right_operands(mlir::ModuleOp module, llvm::ArrayRef<std::string> symbols) {
  const llvm::SmallVector<mlir::func::FuncOp> kernels = ir::named_kernels(module, symbols);
  // The values that are right operands: loads of B, mma's second operand, and everything they
  // move through (branch arguments, constants that initialise them). Each gets vector<16x16xT>.
  llvm::SetVector<mlir::Value> right;
  llvm::SmallVector<mlir::Value> work;
  auto add = [&](mlir::Value v) {
    if (ir::is_matrix_type(v.getType()) && right.insert(v)) work.push_back(v);
  };
  for (mlir::func::FuncOp fn : kernels)
    fn.walk([&](mlir::Operation* call) {
      auto op = ir::matrix_op_of(call);
      if (op == MatrixOp::LoadB || op == MatrixOp::LoadBT) add(call->getResult(0));
      if (op == MatrixOp::Mma) add(call->getOperand(1));
    });
  while (!work.empty()) {
    mlir::Value v = work.pop_back_val();
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(v); arg && !arg.getOwner()->isEntryBlock()) {
      mlir::Block* block = arg.getOwner();
      for (auto it = block->pred_begin(); it != block->pred_end(); ++it) {
        auto branch = llvm::cast<mlir::BranchOpInterface>((*it)->getTerminator());
        for (unsigned s = 0; s < branch->getNumSuccessors(); ++s)
          if (branch->getSuccessor(s) == block)
            add(branch.getSuccessorOperands(s)[arg.getArgNumber()]);
      }
    }
    for (mlir::OpOperand& use : v.getUses()) {
      auto branch = llvm::dyn_cast<mlir::BranchOpInterface>(use.getOwner());
      if (!branch) continue;
      for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
        mlir::OperandRange forwarded = branch.getSuccessorOperands(s).getForwardedOperands();
        for (unsigned i = 0; i < forwarded.size(); ++i)
          if (forwarded.getBeginOperandIndex() + i == use.getOperandNumber())
            add(branch->getSuccessor(s)->getArgument(branch.getSuccessorOperands(s).getProducedOperandCount() + i));
      }
    }
  }
  auto right_type = [](mlir::Type t) {   // K x 16 (K = 32 for int8)
    auto v = llvm::cast<mlir::VectorType>(t);
    return mlir::VectorType::get({v.getNumElements() / ir::kMatrixTile, ir::kMatrixTile}, v.getElementType());
  };
  for (mlir::Value v : right) {
    mlir::Type t = right_type(v.getType());
    if (auto c = v.getDefiningOp<mlir::arith::ConstantOp>()) {
      auto dense = llvm::cast<mlir::DenseElementsAttr>(c.getValue());
      c.setValueAttr(dense.reshape(llvm::cast<mlir::ShapedType>(t)));
    }
    v.setType(t);
  }
}

namespace {

mlir::spirv::CooperativeMatrixType coop_type(mlir::Type element, mlir::spirv::CooperativeMatrixUseKHR use,
                                             int64_t rows = ir::kMatrixTile, int64_t cols = ir::kMatrixTile) {
  return mlir::spirv::CooperativeMatrixType::get(element, rows, cols, mlir::spirv::Scope::Subgroup, use);
}

// 16-bit floats travel as their bits after legalisation (ir/legalize.h); the tiles this lowering
// takes are half (coop_lowerable), so an i16 tile element is f16.
mlir::Type tile_component(mlir::Type element) {
  if (element.isInteger(16)) return mlir::Float16Type::get(element.getContext());
  return element;
}

// An accumulator (subgroup or workgroup scope) stored row-major to memory of element type
// `memory`: float to half first (round to nearest even, as the kernel language's stores do).
void store_accumulator(mlir::ConversionPatternRewriter& rewriter, mlir::Location l, mlir::Value ptr, mlir::Value value,
                       mlir::Type memory, mlir::Value stride) {
  auto acc = llvm::cast<mlir::spirv::CooperativeMatrixType>(value.getType());
  if (memory != acc.getElementType())
    value = rewriter.create<mlir::spirv::FConvertOp>(
        l,
        mlir::spirv::CooperativeMatrixType::get(memory, acc.getRows(), acc.getColumns(), acc.getScope(),
                                                mlir::spirv::CooperativeMatrixUseKHR::MatrixAcc),
        value);
  rewriter.create<mlir::spirv::KHRCooperativeMatrixStoreOp>(l, ptr, value, mlir::spirv::CooperativeMatrixLayoutKHR::RowMajor,
                                                           stride, mlir::spirv::MemoryAccessAttr());
}

// A conversion pattern for the operations `kind` tells (qv.matrix_*, qv.block_*), which share
// no op class.
template <typename Kind>
struct TileOpPattern : mlir::ConversionPattern {
  TileOpPattern(mlir::TypeConverter& converter, mlir::MLIRContext* ctx, mlir::PatternBenefit benefit)
      : mlir::ConversionPattern(converter, mlir::Pattern::MatchAnyOpTypeTag(), benefit, ctx) {}

  mlir::LogicalResult matchAndRewrite(mlir::Operation* call, llvm::ArrayRef<mlir::Value> args,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto op = Kind::of(call);
    if (!op) return mlir::failure();
    return Kind::rewrite(*getTypeConverter<mlir::SPIRVTypeConverter>(), call, *op, mlir::ValueRange(args), rewriter);
  }
};

// qv.matrix_* -> OpCooperativeMatrix{Load,Store,MulAdd}KHR.
struct MatrixOps {
  static std::optional<MatrixOp> of(mlir::Operation* op) { return ir::matrix_op_of(op); }
  static mlir::LogicalResult rewrite(const mlir::SPIRVTypeConverter& converter, mlir::Operation* call, MatrixOp op,
                                     mlir::ValueRange args, mlir::ConversionPatternRewriter& rewriter) {
    mlir::Location l = call->getLoc();
    using Layout = mlir::spirv::CooperativeMatrixLayoutKHR;
    auto pointer = [&]() -> mlir::Value {
      auto memref = llvm::cast<mlir::MemRefType>(call->getOperand(0).getType());
      return mlir::spirv::getElementPtr(converter, memref, args[0], mlir::ValueRange{args[1]}, l, rewriter);
    };
    switch (op) {
      case MatrixOp::LoadA:
      case MatrixOp::LoadB:
      case MatrixOp::LoadBT:
      case MatrixOp::LoadAcc: {
        mlir::Type result = converter.convertType(call->getResult(0).getType());
        mlir::Value ptr = pointer();
        if (!result || !ptr) return rewriter.notifyMatchFailure(call, "no cooperative-matrix type or pointer");
        // B given as its N x K transpose (B[k][j] = m[j * stride + k]) is B stored column-major.
        Layout layout = op == MatrixOp::LoadBT ? Layout::ColumnMajor : Layout::RowMajor;
        rewriter.replaceOpWithNewOp<mlir::spirv::KHRCooperativeMatrixLoadOp>(call, result, ptr, layout, args[2],
                                                                             mlir::spirv::MemoryAccessAttr());
        return mlir::success();
      }
      case MatrixOp::Store: {
        mlir::Value ptr = pointer();
        if (!ptr) return rewriter.notifyMatchFailure(call, "no pointer");
        // A word array's store names the element type it writes (ir/legalize.h).
        mlir::TypeAttr word_element = llvm::cast<ir::qv::MatrixStoreOp>(call).getWordElementAttr();
        mlir::Type memory = tile_component(word_element ? word_element.getValue() : memory_element(call->getOperand(0)));
        store_accumulator(rewriter, l, ptr, args[3], memory, args[2]);
        rewriter.eraseOp(call);
        return mlir::success();
      }
      case MatrixOp::Mma: {
        // Integer components are unsigned unless flagged: int8 inputs and the int32 accumulator
        // are signed (the product wraps, no SaturatingAccumulation).
        using Operands = mlir::spirv::CooperativeMatrixOperandsKHR;
        mlir::spirv::CooperativeMatrixOperandsKHRAttr flags;
        if (tile_element(call->getOperand(0)).isInteger(8))
          flags = mlir::spirv::CooperativeMatrixOperandsKHRAttr::get(
              rewriter.getContext(),
              Operands::ASigned | Operands::BSigned | Operands::CSigned | Operands::ResultSigned);
        rewriter.replaceOpWithNewOp<mlir::spirv::KHRCooperativeMatrixMulAddOp>(call, args[0], args[1], args[2], flags);
        return mlir::success();
      }
      default: return rewriter.notifyMatchFailure(call, "no cooperative-matrix form");
    }
  }
};

// qv.block_* -> workgroup-scope OpCooperativeMatrix{Load,MulAdd,Store}KHR: the
// operands of a product are loaded by the whole workgroup from where they lie (the driver stages
// them), the product is one instruction; an accumulator is stored and loaded as one.
struct BlockOps {
  static std::optional<ir::BlockOp> of(mlir::Operation* op) { return ir::block_op_of(op); }
  static mlir::LogicalResult rewrite(const mlir::SPIRVTypeConverter& converter, mlir::Operation* call, ir::BlockOp op,
                                     mlir::ValueRange args, mlir::ConversionPatternRewriter& rewriter) {
    mlir::Location l = call->getLoc();
    using Layout = mlir::spirv::CooperativeMatrixLayoutKHR;
    using Use = mlir::spirv::CooperativeMatrixUseKHR;
    auto pointer = [&](unsigned at) -> mlir::Value {
      auto memref = llvm::cast<mlir::MemRefType>(call->getOperand(at).getType());
      return mlir::spirv::getElementPtr(converter, memref, args[at], mlir::ValueRange{args[at + 1]}, l, rewriter);
    };
    if (op == ir::BlockOp::Store) {
      mlir::Value ptr = pointer(0);
      if (!ptr) return rewriter.notifyMatchFailure(call, "no pointer");
      store_accumulator(rewriter, l, ptr, args[3], tile_component(memory_element(call->getOperand(0))), args[2]);
      rewriter.eraseOp(call);
      return mlir::success();
    }
    if (op == ir::BlockOp::Load) {
      mlir::Type tile = converter.convertType(call->getResult(0).getType());
      mlir::Value ptr = pointer(0);
      if (!tile || !ptr) return rewriter.notifyMatchFailure(call, "no cooperative-matrix type or pointer");
      rewriter.replaceOpWithNewOp<mlir::spirv::KHRCooperativeMatrixLoadOp>(call, tile, ptr, Layout::RowMajor, args[2],
                                                                           mlir::spirv::MemoryAccessAttr());
      return mlir::success();
    }
    auto acc = llvm::dyn_cast<mlir::spirv::CooperativeMatrixType>(args[0].getType());
    mlir::Value a = pointer(1), b = pointer(4);
    if (!acc || !a || !b) return rewriter.notifyMatchFailure(call, "no cooperative-matrix type or pointer");
    const int64_t depth = ir::block_product_depth(call);
    // Half (carried as i16 bits in memory) or int8 operands.
    mlir::Type operand = tile_component(memory_element(call->getOperand(1)));
    auto scope = mlir::spirv::Scope::Workgroup;
    auto type_a = mlir::spirv::CooperativeMatrixType::get(operand, acc.getRows(), depth, scope, Use::MatrixA);
    auto type_b = mlir::spirv::CooperativeMatrixType::get(operand, depth, acc.getColumns(), scope, Use::MatrixB);
    // B given as its N x K transpose (B[k][j] = m[j * stride + k]) is B stored column-major.
    Layout layout_b = op == ir::BlockOp::MmaBT ? Layout::ColumnMajor : Layout::RowMajor;
    mlir::Value ta = rewriter.create<mlir::spirv::KHRCooperativeMatrixLoadOp>(l, type_a, a, Layout::RowMajor, args[3],
                                                                             mlir::spirv::MemoryAccessAttr());
    mlir::Value tb = rewriter.create<mlir::spirv::KHRCooperativeMatrixLoadOp>(l, type_b, b, layout_b, args[6],
                                                                             mlir::spirv::MemoryAccessAttr());
    // int8 inputs and the int32 accumulator are signed (the sums wrap, no saturation).
    using Operands = mlir::spirv::CooperativeMatrixOperandsKHR;
    mlir::spirv::CooperativeMatrixOperandsKHRAttr flags;
    if (operand.isInteger(8))
      flags = mlir::spirv::CooperativeMatrixOperandsKHRAttr::get(
          rewriter.getContext(), Operands::ASigned | Operands::BSigned | Operands::CSigned | Operands::ResultSigned);
    rewriter.replaceOpWithNewOp<mlir::spirv::KHRCooperativeMatrixMulAddOp>(call, ta, tb, args[0], flags);
    return mlir::success();
  }
};

// A splat tile (constant, broadcast, splat) -> OpCompositeConstruct of its one scalar, which
// for a cooperative matrix fills every element.
mlir::Value construct_splat(mlir::ConversionPatternRewriter& rewriter, mlir::Location l, mlir::Type coop,
                            mlir::Value scalar) {
  return rewriter.create<mlir::spirv::CompositeConstructOp>(l, coop, mlir::ValueRange{scalar});
}

struct TileConstantLowering final : mlir::OpConversionPattern<mlir::arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::ConstantOp c, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (!is_coop_value_type(c.getType())) return mlir::failure();
    auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
    mlir::Type coop = getTypeConverter()->convertType(c.getType());
    if (!dense || !dense.isSplat() || !coop) return rewriter.notifyMatchFailure(c, "not a splat tile");
    auto element = llvm::cast<mlir::spirv::CooperativeMatrixType>(coop).getElementType();
    mlir::Attribute value = dense.getSplatValue<mlir::Attribute>();
    if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(value); i && element.isF16())   // half carried as bits
      value = mlir::FloatAttr::get(element, llvm::APFloat(llvm::APFloat::IEEEhalf(), i.getValue()));
    mlir::Value scalar = rewriter.create<mlir::spirv::ConstantOp>(c.getLoc(), element, value);
    rewriter.replaceOp(c, construct_splat(rewriter, c.getLoc(), coop, scalar));
    return mlir::success();
  }
};

template <typename Op>
struct TileBroadcastLowering final : mlir::OpConversionPattern<Op> {
  using mlir::OpConversionPattern<Op>::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (!is_coop_value_type(op.getType())) return mlir::failure();
    mlir::Type coop = this->getTypeConverter()->convertType(op.getType());
    if (!coop) return mlir::failure();
    rewriter.replaceOp(op, construct_splat(rewriter, op.getLoc(), coop, adaptor.getOperands()[0]));
    return mlir::success();
  }
};

// An undefined tile (a tile variable read before its first assignment on some path) -> OpUndef.
struct TilePoisonLowering final : mlir::OpConversionPattern<mlir::ub::PoisonOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::ub::PoisonOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (!is_coop_value_type(op.getType())) return mlir::failure();
    mlir::Type coop = getTypeConverter()->convertType(op.getType());
    if (!coop) return mlir::failure();
    rewriter.replaceOpWithNewOp<mlir::spirv::UndefOp>(op, coop);
    return mlir::success();
  }
};

// tile * scalar (a broadcast or a splat constant on either side) -> OpMatrixTimesScalar; other
// products of tiles are component-wise OpFMul (ArithToSPIRV's pattern).
struct TileScaleLowering final : mlir::OpConversionPattern<mlir::arith::MulFOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::arith::MulFOp mul, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (!is_coop_value_type(mul.getType())) return mlir::failure();
    for (int side = 0; side < 2; ++side) {
      mlir::Value converted;
      if (mlir::Value scalar = splat_source(mul->getOperand(side))) {
        converted = rewriter.getRemappedValue(scalar);
      } else if (auto c = mul->getOperand(side).getDefiningOp<mlir::arith::ConstantOp>()) {
        auto dense = llvm::dyn_cast<mlir::DenseFPElementsAttr>(c.getValue());
        if (dense && dense.isSplat())
          converted = rewriter.create<mlir::spirv::ConstantOp>(mul.getLoc(), dense.getElementType(),
                                                               dense.getSplatValue<mlir::Attribute>());
      }
      if (!converted) continue;
      rewriter.replaceOpWithNewOp<mlir::spirv::MatrixTimesScalarOp>(mul, adaptor.getOperands()[1 - side], converted);
      return mlir::success();
    }
    return mlir::failure();
  }
};

// The lane shares' subgroup barrier (matrix_coop_lanes.h): every invocation of the subgroup
// arrives, and its workgroup-memory writes are visible to the others after it.
struct SubgroupBarrierLowering final : mlir::OpConversionPattern<ir::qv::SubgroupBarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(ir::qv::SubgroupBarrierOp call, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    using Sem = mlir::spirv::MemorySemantics;
    rewriter.replaceOpWithNewOp<mlir::spirv::ControlBarrierOp>(call, mlir::spirv::Scope::Subgroup,
                                                               mlir::spirv::Scope::Subgroup,
                                                               Sem::AcquireRelease | Sem::WorkgroupMemory);
    return mlir::success();
  }
};

}  // namespace

std::vector<std::string> cooperative_matrix_requirements(llvm::ArrayRef<mlir::func::FuncOp> kernels) {
  // The configurations the kernels' operands name: half (also for a kernel that only loads,
  // scales and stores accumulators), int8.
  bool half = false, int8 = false;
  for (mlir::func::FuncOp fn : kernels) {
    bool operands = false;
    fn.walk([&](mlir::Operation* call) {
      auto op = ir::matrix_op_of(call);
      if (op != MatrixOp::LoadA && op != MatrixOp::LoadB && op != MatrixOp::LoadBT && op != MatrixOp::Mma) return;
      mlir::Type e = *op == MatrixOp::Mma ? tile_element(call->getOperand(0)) : memory_element(call->getOperand(0));
      operands = true;
      (e.isInteger(8) ? int8 : half) = true;
    });
    half = half || !operands;
  }
  std::vector<std::string> out = {"extension:VK_KHR_cooperative_matrix"};
  if (half) out.push_back("cooperative_matrix:16x16x16:f16*f16+f32:subgroup");
  if (int8) out.push_back("cooperative_matrix:16x16x32:i8*i8+i32:subgroup");
  if (half) out.push_back("feature:shaderFloat16");
  out.push_back("feature:vulkanMemoryModel");
  return out;
}

void populate_matrix_coop_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns) {
  // Added last, tried first: tiles never reach the converter's own vector rule (which stops at 4).
  converter.addConversion([](mlir::VectorType t) -> std::optional<mlir::Type> {
    using Use = mlir::spirv::CooperativeMatrixUseKHR;
    if (ir::is_block_tile_type(t))   // M x N, the whole workgroup's
      return mlir::spirv::CooperativeMatrixType::get(t.getElementType(), t.getDimSize(0), t.getDimSize(1),
                                                     mlir::spirv::Scope::Workgroup, Use::MatrixAcc);
    if (!ir::is_tile_type(t)) return std::nullopt;
    mlir::Type element = tile_component(t.getElementType());
    if (t.getRank() == 2) return coop_type(element, Use::MatrixB, t.getDimSize(0), t.getDimSize(1));   // K x 16
    if (element.isF32() || element.isInteger(32)) return coop_type(element, Use::MatrixAcc);
    return coop_type(element, Use::MatrixA, ir::kMatrixTile, t.getNumElements() / ir::kMatrixTile);   // 16 x K
  });
  mlir::MLIRContext* ctx = patterns.getContext();
  // Benefit 2: ahead of ArithToSPIRV's patterns for the same ops, which know only vectors.
  patterns.add<TileOpPattern<MatrixOps>, TileOpPattern<BlockOps>, TileConstantLowering, TileBroadcastLowering<mlir::vector::BroadcastOp>,
               TileBroadcastLowering<mlir::vector::SplatOp>, TileScaleLowering, TilePoisonLowering,
               SubgroupBarrierLowering>(
      converter, ctx, /*benefit=*/2);
}

}  // namespace quiver::compiler::spirv_target
