#include "targets/spirv/integer_dot.h"

#include "ir/intrinsics.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

struct Dot4Lowering final : mlir::OpConversionPattern<ir::qv::Dot4I8Op> {
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(ir::qv::Dot4I8Op op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    mlir::Location l = op.getLoc();
    auto packed = mlir::spirv::PackedVectorFormatAttr::get(getContext(),
                                                           mlir::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    mlir::Value dot = rewriter.create<mlir::spirv::SDotOp>(l, rewriter.getI32Type(), adaptor.getA(), adaptor.getB(), packed);
    rewriter.replaceOpWithNewOp<mlir::spirv::IAddOp>(op, adaptor.getAcc(), dot);
    return mlir::success();
  }
};

}  // namespace

bool uses_dot4_i8(mlir::ModuleOp module) {
  bool used = false;
  module.walk([&](ir::qv::Dot4I8Op) { used = true; });
  return used;
}

void populate_integer_dot_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns) {
  patterns.add<Dot4Lowering>(converter, patterns.getContext(), /*benefit=*/2);
}

}  // namespace quiver::compiler::spirv_target
