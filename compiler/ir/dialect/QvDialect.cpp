// The qv dialect's registration and verifiers: the combinations docs/matrix.md allows.
#include "ir/dialect/QvDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "ir/dialect/QvDialect.cpp.inc"

#define GET_OP_CLASSES
#include "ir/dialect/QvOps.cpp.inc"

namespace quiver::ir::qv {

void QvDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/dialect/QvOps.cpp.inc"
      >();
}

namespace {

bool is_16bit_float(mlir::Type t) { return t.isF16() || t.isBF16(); }

bool in_workgroup_memory(mlir::MemRefType m) {
  auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(m.getMemorySpace());
  return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
}

// A share of 64 x N, N = 16 .. 256 in steps of 16: N/2 = 8 .. 128 elements in steps of 8.
mlir::LogicalResult verify_share(mlir::Operation* op, mlir::VectorType share) {
  int64_t n = 2 * share.getNumElements();
  if (n < 16 || n > 256 || n % 16 != 0)
    return op->emitOpError("accumulator share ") << share << " is not vector<N/2> for N = 16 .. 256 in steps of 16";
  return mlir::success();
}

// Both operands in shared memory with the same element type, which the accumulator's fixes:
// f16 / bf16 with f32, i8 with i32 (only K-major B takes i8).
mlir::LogicalResult verify_product(mlir::Operation* op, mlir::Value a, mlir::Value b, mlir::VectorType share,
                                   bool int8_allowed) {
  if (mlir::failed(verify_share(op, share))) return mlir::failure();
  auto am = llvm::cast<mlir::MemRefType>(a.getType()), bm = llvm::cast<mlir::MemRefType>(b.getType());
  for (auto [m, what] : {std::pair{am, "A"}, std::pair{bm, "B"}})
    if (!in_workgroup_memory(m)) return op->emitOpError() << what << " must be in workgroup memory, not " << m;
  mlir::Type e = am.getElementType();
  if (e != bm.getElementType())
    return op->emitOpError("A and B must have the same element type, not ") << e << " and " << bm.getElementType();
  mlir::Type acc = share.getElementType();
  if (e.isInteger(8)) {
    if (!int8_allowed)
      return op->emitOpError("i8 operands read B K-major only: use qv.warpgroup_mma_bt");
    if (!acc.isInteger(32)) return op->emitOpError("i8 operands take an i32 accumulator, not ") << acc;
    return mlir::success();
  }
  if (!is_16bit_float(e))
    return op->emitOpError("operands must be f16, bf16") << (int8_allowed ? " or i8" : "") << ", not " << e;
  if (!acc.isF32()) return op->emitOpError() << e << " operands take an f32 accumulator, not " << acc;
  return mlir::success();
}

// Float shares go to f32, f16 or bf16 memory (`floats_to_16bit_only`: f16 or bf16); int32 ones,
// where `int_allowed`, to i32 memory.
mlir::LogicalResult verify_store(mlir::Operation* op, mlir::Value dst, mlir::VectorType share, bool int_allowed,
                                 bool floats_to_16bit_only) {
  if (mlir::failed(verify_share(op, share))) return mlir::failure();
  mlir::Type e = llvm::cast<mlir::MemRefType>(dst.getType()).getElementType();
  if (share.getElementType().isInteger(32)) {
    if (!int_allowed) return op->emitOpError("takes a float accumulator, not ") << share;
    if (!e.isInteger(32)) return op->emitOpError("an i32 accumulator is stored to i32 memory, not ") << e;
    return mlir::success();
  }
  if (!is_16bit_float(e) && !(e.isF32() && !floats_to_16bit_only))
    return op->emitOpError("stores a float accumulator to ") << (floats_to_16bit_only ? "f16 or bf16" : "f32, f16 or bf16")
                                                            << " memory, not " << e;
  return mlir::success();
}

}  // namespace

mlir::LogicalResult WarpgroupMmaOp::verify() {
  return verify_product(*this, getA(), getB(), getAcc().getType(), /*int8_allowed=*/false);
}

mlir::LogicalResult WarpgroupMmaBTOp::verify() {
  return verify_product(*this, getA(), getBt(), getAcc().getType(), /*int8_allowed=*/true);
}

mlir::LogicalResult WarpgroupStoreOp::verify() {
  return verify_store(*this, getDst(), getAcc().getType(), /*int_allowed=*/true, /*floats_to_16bit_only=*/false);
}

mlir::LogicalResult WarpgroupStoreBoundedOp::verify() {
  return verify_store(*this, getDst(), getAcc().getType(), /*int_allowed=*/false, /*floats_to_16bit_only=*/false);
}

mlir::LogicalResult WarpgroupStoreSwizzledOp::verify() {
  return verify_store(*this, getDst(), getAcc().getType(), /*int_allowed=*/false, /*floats_to_16bit_only=*/true);
}

}  // namespace quiver::ir::qv
