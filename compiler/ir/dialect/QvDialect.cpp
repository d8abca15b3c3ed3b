// The qv dialect's registration and verifiers: the combinations docs/matrix.md allows, in the
// forms the passes between the front end and a target's lowering give them (QvOps.td).
#include "ir/dialect/QvDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "ir/dialect/QvDialect.cpp.inc"
#include "ir/dialect/QvEnums.cpp.inc"

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

// --- Matrix and block tiles -------------------------------------------------------------------

constexpr int64_t kTileElements = 256;   // 16 x 16
constexpr int64_t kLanes = 32;           // a lane's fragment or share: a 32nd of the tile

// Elements of 16-bit float operands: f16, bf16, or their bits once qv-16bit-floats-as-bits ran.
bool is_16bit_operand(mlir::Type t) { return is_16bit_float(t) || t.isInteger(16); }

enum class TileUse { Left, Right, Acc };

// Whether `t` is a tile of `use` in one of its forms: the whole tile (vector<256 x T>, 512 for
// int8 operands), a lane's fragment or share (a 32nd of it), or, for right operands, the
// vector<K x 16 x T> of a cooperative-matrix image.
mlir::LogicalResult verify_tile(mlir::Operation* op, mlir::Type type, TileUse use, llvm::StringRef what) {
  auto t = llvm::cast<mlir::VectorType>(type);
  mlir::Type e = t.getElementType();
  bool acc = use == TileUse::Acc;
  if (acc ? !(e.isF32() || e.isInteger(32)) : !(is_16bit_operand(e) || e.isInteger(8)))
    return op->emitOpError() << what << " " << t << " must have " << (acc ? "f32 or i32" : "f16, bf16 (or i16 bits) or i8")
                             << " elements";
  const int64_t whole = !acc && e.isInteger(8) ? 2 * kTileElements : kTileElements;
  if (t.getRank() == 1 && (t.getNumElements() == whole || t.getNumElements() == whole / kLanes)) return mlir::success();
  if (use == TileUse::Right && t.getRank() == 2 && t.getDimSize(0) == whole / 16 && t.getDimSize(1) == 16)
    return mlir::success();
  auto diag = op->emitOpError() << what << " " << t << " is not a tile: " << mlir::VectorType::get({whole}, e);
  if (use == TileUse::Right) diag << ", " << mlir::VectorType::get({whole / 16, 16}, e);
  return diag << " or a lane's " << mlir::VectorType::get({whole / kLanes}, e);
}

// A lane's fragment or share rather than the whole tile.
bool is_lane_form(mlir::Type t) {
  auto v = llvm::cast<mlir::VectorType>(t);
  return v.getRank() == 1 && v.getNumElements() < kTileElements;
}

// The element type a tile is read from or written to at `mem`: the memref's, or for a workgroup
// array of 16-byte words (qv-scalarize-vectors), the one `word_element` names.
mlir::FailureOr<mlir::Type> tile_memory_element(mlir::Operation* op, mlir::Value mem, mlir::TypeAttr word_element) {
  auto m = llvm::cast<mlir::MemRefType>(mem.getType());
  auto words = mlir::VectorType::get({4}, mlir::IntegerType::get(op->getContext(), 32));
  if (m.getElementType() == words && in_workgroup_memory(m)) {
    if (!word_element) return op->emitOpError("on a word array ") << m << " needs word_element, the type of the tile's elements";
    return word_element.getValue();
  }
  if (word_element) return op->emitOpError("word_element is only for a workgroup array of vector<4xi32>, not ") << m;
  return m.getElementType();
}

// A float accumulator goes to f32, f16 or bf16 memory (i16: bf16 or f16 carried as bits); an
// int32 one to i32 memory.
mlir::LogicalResult verify_accumulator_store(mlir::Operation* op, mlir::Type acc, mlir::Type memory) {
  if (acc.isInteger(32) ? memory.isInteger(32) : (memory.isF32() || is_16bit_operand(memory))) return mlir::success();
  return op->emitOpError("stores an ") << acc << " accumulator to " << (acc.isInteger(32) ? "i32" : "f32, f16 or bf16")
                                        << " memory, not " << memory;
}

mlir::Type element_of(mlir::Type t) { return llvm::cast<mlir::ShapedType>(t).getElementType(); }

// A block tile: vector<M x N x f32 | i32>.
mlir::LogicalResult verify_block_acc(mlir::Operation* op, mlir::Type type) {
  auto t = llvm::cast<mlir::VectorType>(type);
  if (t.getRank() != 2 || !(t.getElementType().isF32() || t.getElementType().isInteger(32)))
    return op->emitOpError("block accumulator ") << t << " is not vector<M x N x f32> or vector<M x N x i32>";
  return mlir::success();
}

}  // namespace

mlir::LogicalResult MatrixLoadOp::verify() {
  MatrixRole role = getRole();
  TileUse use = role == MatrixRole::A ? TileUse::Left : role == MatrixRole::Acc ? TileUse::Acc : TileUse::Right;
  if (mlir::failed(verify_tile(*this, getTile().getType(), use, "tile"))) return mlir::failure();
  mlir::FailureOr<mlir::Type> memory = tile_memory_element(*this, getSrc(), getWordElementAttr());
  if (mlir::failed(memory)) return mlir::failure();
  // qv-16bit-floats-as-bits retypes the tile, not the word_element naming the float it carries.
  mlir::Type tile = element_of(getTile().getType());
  if (*memory != tile && !(tile.isInteger(16) && is_16bit_float(*memory)))
    return emitOpError("reads a tile of ") << tile << " from memory of " << *memory;
  return mlir::success();
}

mlir::LogicalResult MatrixStoreOp::verify() {
  if (mlir::failed(verify_tile(*this, getTile().getType(), TileUse::Acc, "accumulator"))) return mlir::failure();
  mlir::FailureOr<mlir::Type> memory = tile_memory_element(*this, getDst(), getWordElementAttr());
  if (mlir::failed(memory)) return mlir::failure();
  return verify_accumulator_store(*this, element_of(getTile().getType()), *memory);
}

mlir::LogicalResult MatrixMmaOp::verify() {
  if (mlir::failed(verify_tile(*this, getA().getType(), TileUse::Left, "A")) ||
      mlir::failed(verify_tile(*this, getB().getType(), TileUse::Right, "B")) ||
      mlir::failed(verify_tile(*this, getAcc().getType(), TileUse::Acc, "accumulator")))
    return mlir::failure();
  mlir::Type a = element_of(getA().getType()), b = element_of(getB().getType()), acc = element_of(getAcc().getType());
  if (a != b) return emitOpError("A and B must have the same element type, not ") << a << " and " << b;
  if (a.isInteger(8) ? !acc.isInteger(32) : !acc.isF32())
    return emitOpError() << a << " operands take an " << (a.isInteger(8) ? "i32" : "f32") << " accumulator, not " << acc;
  bool lane = is_lane_form(getAcc().getType());
  if (is_lane_form(getA().getType()) != lane || is_lane_form(getB().getType()) != lane)
    return emitOpError("mixes whole tiles and lanes' fragments");
  return mlir::success();
}

namespace {
mlir::LogicalResult verify_float_acc(mlir::Operation* op, mlir::Value acc) {
  if (mlir::failed(verify_tile(op, acc.getType(), TileUse::Acc, "accumulator"))) return mlir::failure();
  if (!element_of(acc.getType()).isF32()) return op->emitOpError("takes a float accumulator, not ") << acc.getType();
  return mlir::success();
}
}  // namespace

mlir::LogicalResult MatrixRowMaxOp::verify() { return verify_float_acc(*this, getAcc()); }
mlir::LogicalResult MatrixRowSumOp::verify() { return verify_float_acc(*this, getAcc()); }

mlir::LogicalResult MatrixToAOp::verify() {
  if (mlir::failed(verify_float_acc(*this, getAcc())) ||
      mlir::failed(verify_tile(*this, getResult().getType(), TileUse::Left, "result")))
    return mlir::failure();
  auto acc = llvm::cast<mlir::VectorType>(getAcc().getType()), a = llvm::cast<mlir::VectorType>(getResult().getType());
  if (!is_16bit_operand(a.getElementType()))
    return emitOpError("makes an f16 or bf16 tile, not ") << a;
  if (a.getNumElements() != acc.getNumElements())
    return emitOpError("result ") << a << " does not hold the elements of " << acc;
  return mlir::success();
}

namespace {
template <typename Op>
mlir::LogicalResult verify_block_product(Op op) {
  if (mlir::failed(verify_block_acc(op, op.getAcc().getType()))) return mlir::failure();
  mlir::Type a = element_of(op.getA().getType()), b = element_of(op.getB().getType());
  mlir::Type acc = element_of(op.getAcc().getType());
  if (a != b) return op.emitOpError("A and B must have the same element type, not ") << a << " and " << b;
  if (a.isInteger(8)) {
    if (!acc.isInteger(32)) return op.emitOpError("i8 operands take an i32 accumulator, not ") << acc;
    if (op.getK() % 32 != 0) return op.emitOpError("K of i8 operands must be a multiple of 32, not ") << op.getK();
    return mlir::success();
  }
  if (!is_16bit_operand(a)) return op.emitOpError("operands must be f16, bf16 or i8, not ") << a;
  if (!acc.isF32()) return op.emitOpError() << a << " operands take an f32 accumulator, not " << acc;
  if (op.getK() % 16 != 0) return op.emitOpError("K must be a multiple of 16, not ") << op.getK();
  return mlir::success();
}
}  // namespace

mlir::LogicalResult BlockMmaOp::verify() { return verify_block_product(*this); }
mlir::LogicalResult BlockMmaBTOp::verify() { return verify_block_product(*this); }

mlir::LogicalResult BlockStoreOp::verify() {
  if (mlir::failed(verify_block_acc(*this, getAcc().getType()))) return mlir::failure();
  return verify_accumulator_store(*this, element_of(getAcc().getType()), element_of(getDst().getType()));
}

mlir::LogicalResult BlockLoadOp::verify() {
  if (mlir::failed(verify_block_acc(*this, getAcc().getType()))) return mlir::failure();
  mlir::Type memory = element_of(getSrc().getType()), acc = element_of(getAcc().getType());
  if (memory != acc) return emitOpError("reads an ") << acc << " accumulator from memory of " << memory;
  return mlir::success();
}

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
