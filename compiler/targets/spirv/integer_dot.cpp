#include "targets/spirv/integer_dot.h"

#include "ir/intrinsics.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

struct Dot4Lowering final : mlir::OpConversionPattern<mlir::func::CallOp> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(mlir::func::CallOp call, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    if (call.getCallee() != ir::kDot4I8) return mlir::failure();
    mlir::Location l = call.getLoc();
    mlir::ValueRange args = adaptor.getOperands();
    auto packed = mlir::spirv::PackedVectorFormatAttr::get(getContext(),
                                                           mlir::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    mlir::Value dot = rewriter.create<mlir::spirv::SDotOp>(l, rewriter.getI32Type(), args[0], args[1], packed);
    rewriter.replaceOpWithNewOp<mlir::spirv::IAddOp>(call, args[2], dot);
    return mlir::success();
  }
};

}  // namespace

bool uses_dot4_i8(mlir::ModuleOp module) {
  bool used = false;
  module.walk([&](mlir::func::CallOp call) { used = used || call.getCallee() == ir::kDot4I8; });
  return used;
}

void populate_integer_dot_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns) {
  patterns.add<Dot4Lowering>(converter, patterns.getContext(), /*benefit=*/2);
}

}  // namespace quiver::compiler::spirv_target
