// f16 / bf16 carried as i16 bit patterns, for targets whose code generator cannot convert them
// (SPIR-V has no bfloat16; the x86-64-v2 CPU target would need compiler-rt's __truncsfhf2).
// The front end only ever produces 16-bit floats through arith.extf / arith.truncf (the
// kernel language does arithmetic on them in float), so after those are expanded to integer
// arithmetic every remaining use is data movement and the types can simply be rewritten.
#include "ir/legalize.h"

#include <stdexcept>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace quiver::ir {
namespace {

class Bits {
 public:
  Bits(mlir::OpBuilder& b, mlir::Location l, mlir::Type shape_of) : b_(b), l_(l), shape_(shape_of) {}

  // i32 / f32 / i16 with the shape (scalar or vector) of the value being converted.
  mlir::Type like(mlir::Type scalar) const {
    if (auto v = llvm::dyn_cast<mlir::VectorType>(shape_)) return mlir::VectorType::get(v.getShape(), scalar);
    return scalar;
  }
  mlir::Value i32(uint32_t v) { return constant(b_.getI32Type(), b_.getI32IntegerAttr(static_cast<int32_t>(v))); }
  mlir::Value f32(float v) { return constant(b_.getF32Type(), b_.getF32FloatAttr(v)); }

  mlir::Value add(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::AddIOp>(l_, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::SubIOp>(l_, x, y); }
  mlir::Value band(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::AndIOp>(l_, x, y); }
  mlir::Value bor(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::OrIOp>(l_, x, y); }
  mlir::Value shl(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::ShLIOp>(l_, x, y); }
  mlir::Value shr(mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::ShRUIOp>(l_, x, y); }
  mlir::Value ult(mlir::Value x, mlir::Value y) { return cmp(mlir::arith::CmpIPredicate::ult, x, y); }
  mlir::Value uge(mlir::Value x, mlir::Value y) { return cmp(mlir::arith::CmpIPredicate::uge, x, y); }
  mlir::Value ugt(mlir::Value x, mlir::Value y) { return cmp(mlir::arith::CmpIPredicate::ugt, x, y); }
  mlir::Value eq(mlir::Value x, mlir::Value y) { return cmp(mlir::arith::CmpIPredicate::eq, x, y); }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) { return b_.create<mlir::arith::SelectOp>(l_, c, x, y); }
  mlir::Value bitcast(mlir::Type scalar, mlir::Value x) { return b_.create<mlir::arith::BitcastOp>(l_, like(scalar), x); }
  mlir::Value widen(mlir::Value i16) { return b_.create<mlir::arith::ExtUIOp>(l_, like(b_.getI32Type()), i16); }
  mlir::Value narrow(mlir::Value i32) { return b_.create<mlir::arith::TruncIOp>(l_, like(b_.getI16Type()), i32); }
  mlir::OpBuilder& builder() { return b_; }

 private:
  mlir::Value constant(mlir::Type scalar, mlir::TypedAttr attr) {
    if (auto v = llvm::dyn_cast<mlir::VectorType>(shape_))
      return b_.create<mlir::arith::ConstantOp>(
          l_, mlir::DenseElementsAttr::get(mlir::VectorType::get(v.getShape(), scalar), mlir::Attribute(attr)));
    return b_.create<mlir::arith::ConstantOp>(l_, attr);
  }
  mlir::Value cmp(mlir::arith::CmpIPredicate p, mlir::Value x, mlir::Value y) {
    return b_.create<mlir::arith::CmpIOp>(l_, p, x, y);
  }
  mlir::OpBuilder& b_;
  mlir::Location l_;
  mlir::Type shape_;
};

// bfloat16 -> float: the bf16 bits are the high half of the float's (exact).
mlir::Value bf16_to_f32(Bits& k, mlir::Value h) {
  return k.bitcast(k.builder().getF32Type(), k.shl(k.widen(h), k.i32(16)));
}

// float -> bfloat16, round to nearest even; a NaN becomes the quiet NaN 0x7fc0 (its payload
// dropped, as PTX's cvt.rn.bf16.f32 does). NaN is found from the bits: WGSL and Metal may
// assume float comparisons never see one.
mlir::Value f32_to_bf16(Bits& k, mlir::Value f) {
  mlir::Value u = k.bitcast(k.builder().getI32Type(), f);
  mlir::Value lsb = k.band(k.shr(u, k.i32(16)), k.i32(1));
  mlir::Value rounded = k.shr(k.add(u, k.add(k.i32(0x7fff), lsb)), k.i32(16));
  mlir::Value is_nan = k.ugt(k.band(u, k.i32(0x7fffffff)), k.i32(0x7f800000));
  return k.narrow(k.select(is_nan, k.i32(0x7fc0), rounded));
}

// IEEE half -> float (exact, subnormals included, without relying on subnormal float arithmetic).
mlir::Value f16_to_f32(Bits& k, mlir::Value h16) {
  mlir::OpBuilder& b = k.builder();
  mlir::Value h = k.widen(h16);
  mlir::Value sign = k.shl(k.band(h, k.i32(0x8000)), k.i32(16));
  mlir::Value exp = k.band(k.shr(h, k.i32(10)), k.i32(0x1f));
  mlir::Value mant = k.band(h, k.i32(0x3ff));
  mlir::Value normal = k.bor(k.shl(k.add(exp, k.i32(112)), k.i32(23)), k.shl(mant, k.i32(13)));
  mlir::Value special = k.bor(k.i32(0x7f800000), k.shl(mant, k.i32(13)));   // inf / NaN
  // exp == 0: mant * 2^-24, computed on normal floats (mant < 1024, so it is exact).
  mlir::Value tiny_f = b.create<mlir::arith::MulFOp>(
      h.getLoc(), b.create<mlir::arith::UIToFPOp>(h.getLoc(), k.like(b.getF32Type()), mant), k.f32(0x1p-24f));
  mlir::Value tiny = k.bitcast(b.getI32Type(), tiny_f);
  mlir::Value mag = k.select(k.eq(exp, k.i32(0)), tiny, k.select(k.eq(exp, k.i32(0x1f)), special, normal));
  return k.bitcast(b.getF32Type(), k.bor(sign, mag));
}

// float -> IEEE half, round to nearest even; overflow to infinity, NaN stays a quiet NaN.
mlir::Value f32_to_f16(Bits& k, mlir::Value f) {
  mlir::Value u = k.bitcast(k.builder().getI32Type(), f);
  mlir::Value sign = k.band(k.shr(u, k.i32(16)), k.i32(0x8000));
  mlir::Value a = k.band(u, k.i32(0x7fffffff));
  // Normal halves: rebias the exponent (127 -> 15) and round the 13 dropped bits.
  mlir::Value r = k.sub(a, k.i32(0x38000000));
  mlir::Value normal = k.shr(k.add(r, k.add(k.i32(0xfff), k.band(k.shr(r, k.i32(13)), k.i32(1)))), k.i32(13));
  // Subnormal halves (|f| < 2^-14): q = m >> s with m the 24-bit significand, s = 126 - exp.
  mlir::Value e = k.shr(a, k.i32(23));
  mlir::Value m = k.bor(k.band(a, k.i32(0x7fffff)), k.i32(0x800000));
  mlir::Value s = k.sub(k.i32(126), e);
  mlir::Value in_range = k.ult(s, k.i32(25));                     // s >= 25: below half of 2^-24
  mlir::Value s_safe = k.select(in_range, s, k.i32(24));
  mlir::Value q = k.shr(m, s_safe);
  mlir::Value rem = k.band(m, k.sub(k.shl(k.i32(1), s_safe), k.i32(1)));
  mlir::Value half_unit = k.shl(k.i32(1), k.sub(s_safe, k.i32(1)));
  mlir::Value up = k.bor(k.ugt(rem, half_unit), k.band(k.eq(rem, half_unit), k.eq(k.band(q, k.i32(1)), k.i32(1))));
  mlir::Value sub = k.select(in_range, k.add(q, k.select(up, k.i32(1), k.i32(0))), k.i32(0));
  mlir::Value nan = k.bor(k.i32(0x7e00), k.band(k.shr(a, k.i32(13)), k.i32(0x3ff)));
  mlir::Value mag = k.select(k.ugt(a, k.i32(0x7f800000)), nan,
                   k.select(k.uge(a, k.i32(0x477ff000)), k.i32(0x7c00),          // rounds to infinity
                   k.select(k.uge(a, k.i32(0x38800000)), normal, sub)));
  return k.narrow(k.bor(sign, mag));
}

mlir::Type element(mlir::Type t) {
  if (auto s = llvm::dyn_cast<mlir::ShapedType>(t)) return s.getElementType();
  return t;
}

}  // namespace

void carry_16bit_floats_as_bits(mlir::ModuleOp module, bool f16, bool bf16) {
  if (!f16 && !bf16) return;
  auto carried = [&](mlir::Type t) { return (f16 && t.isF16()) || (bf16 && t.isBF16()); };
  mlir::MLIRContext* ctx = module.getContext();
  mlir::Type i16 = mlir::IntegerType::get(ctx, 16);
  // Type rewriting, recursively through vectors, memrefs and function types.
  std::function<mlir::Type(mlir::Type)> convert = [&](mlir::Type t) -> mlir::Type {
    if (carried(t)) return i16;
    if (auto v = llvm::dyn_cast<mlir::VectorType>(t)) return mlir::VectorType::get(v.getShape(), convert(v.getElementType()));
    if (auto m = llvm::dyn_cast<mlir::MemRefType>(t))
      return mlir::MemRefType::get(m.getShape(), convert(m.getElementType()), m.getLayout(), m.getMemorySpace());
    if (auto f = llvm::dyn_cast<mlir::FunctionType>(t)) {
      llvm::SmallVector<mlir::Type> in, out;
      for (mlir::Type x : f.getInputs()) in.push_back(convert(x));
      for (mlir::Type x : f.getResults()) out.push_back(convert(x));
      return mlir::FunctionType::get(ctx, in, out);
    }
    return t;
  };

  // 1. Conversions become integer arithmetic on the bits (arith.bitcast to i16 types, which
  //    the type rewrite below turns into no-ops).
  llvm::SmallVector<mlir::Operation*> conversions;
  module.walk([&](mlir::Operation* op) {
    if (auto ext = llvm::dyn_cast<mlir::arith::ExtFOp>(op); ext && carried(element(ext.getIn().getType())))
      conversions.push_back(op);
    if (auto tr = llvm::dyn_cast<mlir::arith::TruncFOp>(op); tr && carried(element(tr.getType())))
      conversions.push_back(op);
  });
  for (mlir::Operation* op : conversions) {
    mlir::OpBuilder b(op);
    mlir::Location l = op->getLoc();
    mlir::Type shape = op->getResult(0).getType();
    Bits k(b, l, shape);
    mlir::Value result;
    if (auto ext = llvm::dyn_cast<mlir::arith::ExtFOp>(op)) {
      mlir::Value bits = b.create<mlir::arith::BitcastOp>(l, k.like(i16), ext.getIn());
      result = element(ext.getIn().getType()).isBF16() ? bf16_to_f32(k, bits) : f16_to_f32(k, bits);
      if (!element(shape).isF32()) result = b.create<mlir::arith::ExtFOp>(l, shape, result);
    } else {
      auto tr = llvm::cast<mlir::arith::TruncFOp>(op);
      mlir::Value in = tr.getIn();
      if (!element(in.getType()).isF32()) in = b.create<mlir::arith::TruncFOp>(l, k.like(b.getF32Type()), in);
      mlir::Value bits = element(shape).isBF16() ? f32_to_bf16(k, in) : f32_to_f16(k, in);
      result = b.create<mlir::arith::BitcastOp>(l, shape, bits);
    }
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }

  // 2. Constants of the carried types become their bit patterns.
  module.walk([&](mlir::arith::ConstantOp c) {
    mlir::Type t = c.getType();
    if (!carried(element(t))) return;
    mlir::OpBuilder b(c);
    mlir::Attribute bits;
    if (auto f = llvm::dyn_cast<mlir::FloatAttr>(c.getValue()))
      bits = b.getIntegerAttr(i16, f.getValue().bitcastToAPInt());
    else if (auto d = llvm::dyn_cast<mlir::DenseFPElementsAttr>(c.getValue()))
      bits = d.bitcast(i16);
    else
      throw std::runtime_error("internal error: constant of a 16-bit float type with an unexpected attribute");
    c.getResult().replaceAllUsesWith(b.create<mlir::arith::ConstantOp>(c.getLoc(), llvm::cast<mlir::TypedAttr>(bits)).getResult());
    c.erase();
  });

  // 3. Every other value of a carried type is moved, never computed on: rewrite the types.
  module.walk([&](mlir::Operation* op) {
    if (auto fn = llvm::dyn_cast<mlir::func::FuncOp>(op))
      fn.setFunctionType(llvm::cast<mlir::FunctionType>(convert(fn.getFunctionType())));
    for (mlir::Region& r : op->getRegions())
      for (mlir::Block& block : r)
        for (mlir::BlockArgument arg : block.getArguments()) arg.setType(convert(arg.getType()));
    for (mlir::Value v : op->getResults()) v.setType(convert(v.getType()));
  });
  // The bitcasts of step 1 are now i16 -> i16.
  module.walk([&](mlir::arith::BitcastOp c) {
    if (c.getIn().getType() == c.getType()) {
      c.getResult().replaceAllUsesWith(c.getIn());
      c.erase();
    }
  });
}

}  // namespace quiver::ir
