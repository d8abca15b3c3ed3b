#include "targets/spirv/subgroup.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

// Wins over MLIR's own patterns for the same ops.
constexpr unsigned kBenefit = 10;

// The invocation's lane in its subgroup (an i32 Input builtin). MLIR 19's
// spirv::getBuiltinVariableValue cannot create this builtin, so the variable is made here, once
// per module, beside the other builtins.
mlir::Value subgroup_lane(mlir::Operation* op, mlir::OpBuilder& builder) {
  static constexpr llvm::StringLiteral kName = "__builtin__SubgroupLocalInvocationId__";
  mlir::Location loc = op->getLoc();
  mlir::Operation* table = mlir::SymbolTable::getNearestSymbolTable(op->getParentOp());
  mlir::Block& body = table->getRegion(0).front();
  mlir::spirv::GlobalVariableOp var;
  for (auto global : body.getOps<mlir::spirv::GlobalVariableOp>())
    if (global.getSymName() == kName) var = global;
  if (!var) {
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body);
    auto type = mlir::spirv::PointerType::get(builder.getI32Type(), mlir::spirv::StorageClass::Input);
    var = builder.create<mlir::spirv::GlobalVariableOp>(
        loc, type, kName, mlir::spirv::BuiltIn::SubgroupLocalInvocationId);
  }
  mlir::Value address = builder.create<mlir::spirv::AddressOfOp>(loc, var);
  return builder.create<mlir::spirv::LoadOp>(loc, address);
}

class LaneIdPattern final : public mlir::OpConversionPattern<mlir::gpu::LaneIdOp> {
 public:
  LaneIdPattern(mlir::SPIRVTypeConverter& converter, mlir::MLIRContext* ctx)
      : OpConversionPattern(converter, ctx, kBenefit) {}
  mlir::LogicalResult matchAndRewrite(mlir::gpu::LaneIdOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::Type index = getTypeConverter()->convertType(op.getType());
    if (index != rewriter.getI32Type())
      return rewriter.notifyMatchFailure(op, "index must convert to i32");
    rewriter.replaceOp(op, subgroup_lane(op, rewriter));
    return mlir::success();
  }
};

class ShufflePattern final : public mlir::OpConversionPattern<mlir::gpu::ShuffleOp> {
 public:
  ShufflePattern(mlir::SPIRVTypeConverter& converter, mlir::MLIRContext* ctx)
      : OpConversionPattern(converter, ctx, kBenefit) {}
  mlir::LogicalResult matchAndRewrite(mlir::gpu::ShuffleOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::Location loc = op.getLoc();
    mlir::Type value_type = getTypeConverter()->convertType(op.getShuffleResult().getType());
    if (!value_type) return mlir::failure();
    mlir::Value offset = adaptor.getOffset(), width = adaptor.getWidth(), value = adaptor.getValue();
    auto scope = mlir::spirv::Scope::Subgroup;
    mlir::Value lane = subgroup_lane(op, rewriter);
    mlir::Value result, source;
    switch (op.getMode()) {
      case mlir::gpu::ShuffleMode::XOR:
        result = rewriter.create<mlir::spirv::GroupNonUniformShuffleXorOp>(loc, scope, value, offset);
        source = rewriter.create<mlir::spirv::BitwiseXorOp>(loc, lane, offset);
        break;
      case mlir::gpu::ShuffleMode::IDX:
        result = rewriter.create<mlir::spirv::GroupNonUniformShuffleOp>(loc, scope, value, offset);
        source = offset;
        break;
      case mlir::gpu::ShuffleMode::DOWN:
        result = rewriter.create<mlir::spirv::GroupNonUniformShuffleDownOp>(loc, scope, value, offset);
        source = rewriter.create<mlir::spirv::IAddOp>(loc, lane, offset);
        break;
      case mlir::gpu::ShuffleMode::UP:
        result = rewriter.create<mlir::spirv::GroupNonUniformShuffleUpOp>(loc, scope, value, offset);
        // lane - offset wraps to a huge unsigned value when offset > lane: invalid below.
        source = rewriter.create<mlir::spirv::ISubOp>(loc, lane, offset);
        break;
    }
    mlir::Value valid = rewriter.create<mlir::spirv::ULessThanOp>(loc, source, width);
    rewriter.replaceOp(op, {result, valid});
    return mlir::success();
  }
};

}  // namespace

void populate_subgroup_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns) {
  patterns.add<LaneIdPattern, ShufflePattern>(converter, patterns.getContext());
}

}  // namespace quiver::compiler::spirv_target
