// Private to compiler/ir: a small builder for element-wise float code over a scalar or vector
// float type, used by the math lowerings (constants are splatted to the operand's shape).
#pragma once

#include <cstdint>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

namespace quiver::ir::detail {

class FloatEmitter {
 public:
  FloatEmitter(mlir::OpBuilder& b, mlir::Location loc, mlir::Type type)
      : b_(b), loc_(loc), type_(type) {
    elem_ = mlir::cast<mlir::FloatType>(mlir::getElementTypeOrSelf(type));
    mlir::Type int_elem = b.getIntegerType(elem_.getWidth());
    mlir::Type bool_elem = b.getI1Type();
    if (auto vec = mlir::dyn_cast<mlir::VectorType>(type)) {
      int_type_ = mlir::VectorType::get(vec.getShape(), int_elem);
      bool_type_ = mlir::VectorType::get(vec.getShape(), bool_elem);
    } else {
      int_type_ = int_elem;
      bool_type_ = bool_elem;
    }
  }

  mlir::OpBuilder& builder() { return b_; }
  mlir::Location loc() const { return loc_; }
  mlir::Type type() const { return type_; }
  mlir::Type int_type() const { return int_type_; }
  mlir::FloatType elem() { return elem_; }
  unsigned width() { return elem_.getWidth(); }
  unsigned mantissa_bits() { return elem_.getFPMantissaWidth() - 1; }
  int64_t exponent_bias() { return (int64_t{1} << (width() - mantissa_bits() - 2)) - 1; }

  mlir::Value f(double v) {
    mlir::TypedAttr attr = b_.getFloatAttr(elem_, v);
    return splat(attr);
  }
  // A float constant given by its bit pattern (exact constants such as split ln 2).
  mlir::Value f_bits(uint64_t bits) {
    llvm::APFloat value(elem_.getFloatSemantics(), llvm::APInt(width(), bits));
    return splat(b_.getFloatAttr(elem_, value));
  }
  mlir::Value i(int64_t v) { return splat(b_.getIntegerAttr(mlir::getElementTypeOrSelf(int_type_), v)); }

  mlir::Value add(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AddFOp>(loc_, a, c); }
  mlir::Value sub(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::SubFOp>(loc_, a, c); }
  mlir::Value mul(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::MulFOp>(loc_, a, c); }
  mlir::Value div(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::DivFOp>(loc_, a, c); }
  mlir::Value neg(mlir::Value a) { return b_.create<mlir::arith::NegFOp>(loc_, a); }
  mlir::Value fma(mlir::Value a, mlir::Value c, mlir::Value d) { return b_.create<mlir::math::FmaOp>(loc_, a, c, d); }
  mlir::Value abs(mlir::Value a) { return b_.create<mlir::math::AbsFOp>(loc_, a); }
  mlir::Value floor(mlir::Value a) { return b_.create<mlir::math::FloorOp>(loc_, a); }
  mlir::Value roundeven(mlir::Value a) { return b_.create<mlir::math::RoundEvenOp>(loc_, a); }
  mlir::Value trunc(mlir::Value a) { return b_.create<mlir::math::TruncOp>(loc_, a); }
  mlir::Value copysign(mlir::Value mag, mlir::Value sign) { return b_.create<mlir::math::CopySignOp>(loc_, mag, sign); }
  mlir::Value sqrt(mlir::Value a) { return b_.create<mlir::math::SqrtOp>(loc_, a); }
  // NaN-propagating clamp of a to [lo, hi].
  mlir::Value clamp(mlir::Value a, double lo, double hi) {
    mlir::Value t = b_.create<mlir::arith::MaximumFOp>(loc_, a, f(lo));
    return b_.create<mlir::arith::MinimumFOp>(loc_, t, f(hi));
  }

  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value a, mlir::Value c) {
    return b_.create<mlir::arith::CmpFOp>(loc_, p, a, c);
  }
  mlir::Value is_nan(mlir::Value a) { return cmp(mlir::arith::CmpFPredicate::UNO, a, a); }
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value c) {
    return b_.create<mlir::arith::SelectOp>(loc_, cond, a, c);
  }
  mlir::Value and_(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AndIOp>(loc_, a, c); }
  mlir::Value or_(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::OrIOp>(loc_, a, c); }

  // Integer (same width as the float) helpers.
  mlir::Value bits(mlir::Value a) { return b_.create<mlir::arith::BitcastOp>(loc_, int_type_, a); }
  mlir::Value from_bits(mlir::Value a) { return b_.create<mlir::arith::BitcastOp>(loc_, type_, a); }
  mlir::Value iadd(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AddIOp>(loc_, a, c); }
  mlir::Value isub(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::SubIOp>(loc_, a, c); }
  mlir::Value iand(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::AndIOp>(loc_, a, c); }
  mlir::Value ior(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::OrIOp>(loc_, a, c); }
  mlir::Value shl(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::ShLIOp>(loc_, a, c); }
  mlir::Value ashr(mlir::Value a, mlir::Value c) { return b_.create<mlir::arith::ShRSIOp>(loc_, a, c); }
  mlir::Value to_int(mlir::Value a) { return b_.create<mlir::arith::FPToSIOp>(loc_, int_type_, a); }
  mlir::Value to_float(mlir::Value a) { return b_.create<mlir::arith::SIToFPOp>(loc_, type_, a); }

  // Horner evaluation: coeffs[0] + x*(coeffs[1] + x*(...)), with fma.
  mlir::Value horner(mlir::Value x, llvm::ArrayRef<double> coeffs) {
    mlir::Value acc = f(coeffs.back());
    for (size_t k = coeffs.size() - 1; k-- > 0;) acc = fma(acc, x, f(coeffs[k]));
    return acc;
  }

  // v * 2^n for an integer-valued float n with |n| <= 2 * bias - 4: two exact power-of-two
  // factors, so the result is rounded once even when it is subnormal.
  mlir::Value ldexp(mlir::Value v, mlir::Value n_float) {
    mlir::Value n = to_int(n_float);
    mlir::Value half = ashr(n, i(1));
    mlir::Value rest = isub(n, half);
    auto pow2 = [&](mlir::Value k) {
      return from_bits(shl(iadd(k, i(exponent_bias())), i(mantissa_bits())));
    };
    return mul(mul(v, pow2(half)), pow2(rest));
  }

 private:
  mlir::Value splat(mlir::TypedAttr scalar) {
    mlir::Type shaped = mlir::isa<mlir::FloatType>(scalar.getType()) ? type_ : int_type_;
    if (auto vec = mlir::dyn_cast<mlir::VectorType>(shaped)) {
      auto dense = mlir::DenseElementsAttr::get(vec, scalar);
      return b_.create<mlir::arith::ConstantOp>(loc_, dense);
    }
    return b_.create<mlir::arith::ConstantOp>(loc_, scalar);
  }

  mlir::OpBuilder& b_;
  mlir::Location loc_;
  mlir::Type type_;
  mlir::FloatType elem_;
  mlir::Type int_type_;
  mlir::Type bool_type_;
};

// Lowerings in math_f64.cpp: each returns the replacement value for the op's result.
mlir::Value emit_exp_f64(FloatEmitter& e, mlir::Value x);
mlir::Value emit_log_f64(FloatEmitter& e, mlir::Value x, bool base2);
mlir::Value emit_sincos(FloatEmitter& e, mlir::Value x, bool cosine);   // f32 and f64
mlir::Value emit_tanh_f64(FloatEmitter& e, mlir::Value x);
mlir::Value emit_erf_f64(FloatEmitter& e, mlir::Value x);   // scalar f64 only (has a loop)

}  // namespace quiver::ir::detail
