#include "targets/spirv/atomic.h"

#include "ir/dialect/QvDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/Transforms/DialectConversion.h"

namespace quiver::compiler::spirv_target {
namespace {

constexpr unsigned kBenefit = 10;

// Scope and semantics as MLIR's own atomic patterns use them: device scope for buffers,
// workgroup scope for shared memory, acquire-release on the matching memory class.
std::pair<mlir::spirv::Scope, mlir::spirv::MemorySemantics> scope_of(mlir::MemRefType type) {
  auto space = mlir::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(type.getMemorySpace());
  bool workgroup = space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
  if (auto sc = mlir::dyn_cast_or_null<mlir::spirv::StorageClassAttr>(type.getMemorySpace()))
    workgroup = sc.getValue() == mlir::spirv::StorageClass::Workgroup;
  auto sem = mlir::spirv::MemorySemantics::AcquireRelease |
             (workgroup ? mlir::spirv::MemorySemantics::WorkgroupMemory : mlir::spirv::MemorySemantics::UniformMemory);
  return {workgroup ? mlir::spirv::Scope::Workgroup : mlir::spirv::Scope::Device, sem};
}

class ExchangePattern final : public mlir::OpConversionPattern<mlir::memref::AtomicRMWOp> {
 public:
  ExchangePattern(mlir::SPIRVTypeConverter& converter, mlir::MLIRContext* ctx)
      : OpConversionPattern(converter, ctx, kBenefit) {}
  mlir::LogicalResult matchAndRewrite(mlir::memref::AtomicRMWOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    auto kind = op.getKind();
    if (kind != mlir::arith::AtomicRMWKind::assign && kind != mlir::arith::AtomicRMWKind::addf) return mlir::failure();
    auto type = op.getMemRefType();
    if (!type.getElementType().isInteger(32) && !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "32-bit values only");
    const auto& converter = *getTypeConverter<mlir::SPIRVTypeConverter>();
    mlir::Value ptr = mlir::spirv::getElementPtr(converter, type, adaptor.getMemref(), adaptor.getIndices(),
                                                 op.getLoc(), rewriter);
    if (!ptr) return mlir::failure();
    auto [scope, sem] = scope_of(type);
    mlir::Value value = adaptor.getValue();
    // Float add is OpAtomicFAddEXT (SPV_EXT_shader_atomic_float_add; lavapipe and NVIDIA have it).
    mlir::Value old =
        kind == mlir::arith::AtomicRMWKind::addf
            ? rewriter.create<mlir::spirv::EXTAtomicFAddOp>(op.getLoc(), value.getType(), ptr, scope, sem, value).getResult()
            : rewriter.create<mlir::spirv::AtomicExchangeOp>(op.getLoc(), value.getType(), ptr, scope, sem, value).getResult();
    rewriter.replaceOp(op, old);
    return mlir::success();
  }
};

class CompareExchangePattern final : public mlir::OpConversionPattern<mlir::memref::GenericAtomicRMWOp> {
 public:
  CompareExchangePattern(mlir::SPIRVTypeConverter& converter, mlir::MLIRContext* ctx)
      : OpConversionPattern(converter, ctx, kBenefit) {}
  mlir::LogicalResult matchAndRewrite(mlir::memref::GenericAtomicRMWOp op, OpAdaptor adaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    // Only the compare-and-swap shape: yield(select(cmpi eq(cur, expected), desired, cur)).
    mlir::Block* body = op.getBody();
    auto yield = mlir::dyn_cast<mlir::memref::AtomicYieldOp>(body->getTerminator());
    auto select = yield ? yield.getResult().getDefiningOp<mlir::arith::SelectOp>() : nullptr;
    auto cmp = select ? select.getCondition().getDefiningOp<mlir::arith::CmpIOp>() : nullptr;
    mlir::Value current = op.getCurrentValue();
    if (!cmp || cmp.getPredicate() != mlir::arith::CmpIPredicate::eq || cmp.getLhs() != current ||
        select.getFalseValue() != current)
      return rewriter.notifyMatchFailure(op, "not a compare-and-swap");
    mlir::Value expected = rewriter.getRemappedValue(cmp.getRhs());
    mlir::Value desired = rewriter.getRemappedValue(select.getTrueValue());
    if (!expected || !desired || expected.getParentRegion() == &op.getAtomicBody() ||
        desired.getParentRegion() == &op.getAtomicBody())
      return rewriter.notifyMatchFailure(op, "operands must be defined outside the atomic body");
    auto type = mlir::cast<mlir::MemRefType>(op.getMemref().getType());
    const auto& converter = *getTypeConverter<mlir::SPIRVTypeConverter>();
    mlir::Value ptr = mlir::spirv::getElementPtr(converter, type, adaptor.getMemref(), adaptor.getIndices(),
                                                 op.getLoc(), rewriter);
    if (!ptr) return mlir::failure();
    auto [scope, sem] = scope_of(type);
    auto relaxed = (sem & ~mlir::spirv::MemorySemantics::AcquireRelease) | mlir::spirv::MemorySemantics::Acquire;
    mlir::Value old = rewriter.create<mlir::spirv::AtomicCompareExchangeOp>(
        op.getLoc(), expected.getType(), ptr, scope, sem, relaxed, desired, expected);
    rewriter.replaceOp(op, old);
    return mlir::success();
  }
};

// qv::device_fence: a memory barrier over storage buffers (UniformMemory) at device scope, the
// scope that holds every workgroup of a dispatch. Under GLSL450's memory model the semantics need
// nothing more; the Vulkan model would need MakeAvailable / MakeVisible and the device-scope
// capability (use_vulkan_memory_model refuses such a module).
class DeviceFencePattern final : public mlir::OpConversionPattern<ir::qv::DeviceFenceOp> {
 public:
  using OpConversionPattern::OpConversionPattern;
  mlir::LogicalResult matchAndRewrite(ir::qv::DeviceFenceOp op, OpAdaptor,
                                      mlir::ConversionPatternRewriter& rewriter) const override {
    rewriter.replaceOpWithNewOp<mlir::spirv::MemoryBarrierOp>(
        op, mlir::spirv::Scope::Device,
        mlir::spirv::MemorySemantics::AcquireRelease | mlir::spirv::MemorySemantics::UniformMemory);
    return mlir::success();
  }
};

}  // namespace

void populate_atomic_patterns(mlir::SPIRVTypeConverter& converter, mlir::RewritePatternSet& patterns) {
  patterns.add<ExchangePattern, CompareExchangePattern, DeviceFencePattern>(converter, patterns.getContext());
}

}  // namespace quiver::compiler::spirv_target
