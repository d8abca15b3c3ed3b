#include "ir/math.h"

#include <limits>
#include <string>
#include <vector>

#include "ir/math_emit.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace quiver::ir {

using detail::FloatEmitter;
using mlir::Value;
using Pred = mlir::arith::CmpFPredicate;

bool is_exact_math_op(mlir::Operation* op) {
  return mlir::isa<mlir::math::SqrtOp, mlir::math::FmaOp, mlir::math::AbsFOp, mlir::math::FloorOp,
                   mlir::math::CeilOp, mlir::math::RoundEvenOp, mlir::math::TruncOp,
                   mlir::math::CopySignOp>(op);
}

namespace {

std::string describe(mlir::Operation* op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, mlir::OpPrintingFlags().skipRegions());
  auto func = op->getParentOfType<mlir::FunctionOpInterface>();
  std::string where = func ? "function '" + func.getName().str() + "': " : std::string();
  return where + "'" + text + "'";
}

bool is_f32_like(mlir::Type t) { return mlir::getElementTypeOrSelf(t).isF32(); }
bool is_f64_like(mlir::Type t) { return mlir::getElementTypeOrSelf(t).isF64(); }
bool is_half_like(mlir::Type t) {
  mlir::Type e = mlir::getElementTypeOrSelf(t);
  return e.isF16() || e.isBF16();
}

bool is_lowered_op(mlir::Operation* op) {
  return mlir::isa<mlir::math::ExpOp, mlir::math::Exp2Op, mlir::math::LogOp, mlir::math::Log2Op,
                   mlir::math::SinOp, mlir::math::CosOp, mlir::math::TanhOp, mlir::math::ErfOp,
                   mlir::math::PowFOp, mlir::math::RsqrtOp>(op);
}

mlir::Type with_element(mlir::Type type, mlir::Type elem) {
  if (auto vec = mlir::dyn_cast<mlir::VectorType>(type)) return vec.clone(elem);
  return elem;
}

// f16/bf16: compute in f32 and truncate once, like the C++ front end's usual promotion.
void promote_half(mlir::Operation* op) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  mlir::Type half = op->getResult(0).getType();
  mlir::Type wide = with_element(half, b.getF32Type());
  mlir::OperationState state(loc, op->getName());
  for (Value v : op->getOperands())
    state.addOperands(b.create<mlir::arith::ExtFOp>(loc, wide, v).getResult());
  state.addTypes(wide);
  state.addAttributes(op->getAttrs());
  mlir::Operation* wide_op = b.create(state);
  Value narrow = b.create<mlir::arith::TruncFOp>(loc, half, wide_op->getResult(0));
  op->getResult(0).replaceAllUsesWith(narrow);
  op->erase();
}

// f64 vector erf has a data-dependent loop: run it per element.
void unroll_vector(mlir::Operation* op) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  auto vec = mlir::cast<mlir::VectorType>(op->getResult(0).getType());
  Value acc = b.create<mlir::arith::ConstantOp>(
      loc, mlir::DenseElementsAttr::get(vec, b.getFloatAttr(vec.getElementType(), 0.0)));
  for (int64_t i = 0; i < vec.getNumElements(); ++i) {
    mlir::OperationState state(loc, op->getName());
    for (Value v : op->getOperands())
      state.addOperands(b.create<mlir::vector::ExtractOp>(loc, v, i).getResult());
    state.addTypes(vec.getElementType());
    state.addAttributes(op->getAttrs());
    mlir::Operation* scalar = b.create(state);
    acc = b.create<mlir::vector::InsertOp>(loc, scalar->getResult(0), acc, i);
  }
  op->getResult(0).replaceAllUsesWith(acc);
  op->erase();
}

// exp2(x) = 2^n * exp((x - n) ln 2), n = round(x): x - n is exact, so only exp's error remains.
Value emit_exp2(FloatEmitter& e, Value x) {
  double limit = e.width() == 32 ? 200.0 : 2000.0;
  Value xc = e.clamp(x, -limit, limit);
  Value n = e.roundeven(xc);
  Value r = e.mul(e.sub(xc, n), e.f(0.6931471805599453));
  Value p = e.builder().create<mlir::math::ExpOp>(e.loc(), r);
  Value result = e.ldexp(p, n);
  return e.select(e.is_nan(x), x, result);
}

// f32 exp: exp(x) = 2^n * exp(r), n = round(x / ln2), r = (x - n*C1) - n*C2 with C1 = ln2
// rounded to 9 significant bits, so n*C1 (|n| <= 150) and x - n*C1 are exact whether or not
// the driver fuses the multiply-add: every target computes the same r. exp(r) on
// |r| <= ln2/2 by its Taylor polynomial of degree 7 (truncation < 0.1 ulp).
Value emit_exp_f32(FloatEmitter& e, Value x) {
  Value xc = e.clamp(x, -104.0, 89.0);   // beyond: 0 / inf, reached through ldexp
  Value n = e.roundeven(e.mul(xc, e.f(1.4426950408889634)));
  Value r = e.sub(e.sub(xc, e.mul(n, e.f(0.693359375))), e.mul(n, e.f(-2.1219444005469058e-4)));
  static constexpr double kTaylor[] = {1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040};
  Value q = e.horner(r, kTaylor);         // (exp(r) - 1) / r
  Value p = e.add(e.f(1.0), e.mul(r, q));
  return e.select(e.is_nan(x), x, e.ldexp(p, n));
}

// f32 tanh: odd Taylor polynomial up to x^21 for |x| < 0.625 (remainder < 2e-9 relative);
// beyond, with t = exp(-2|x|) <= 0.29, tanh|x| = 1 - 2t / (1 + t): the subtracted term is at
// most 0.45, so its rounding reaches the result scaled down (about 1.3 ulp in all).
Value emit_tanh_f32(FloatEmitter& e, Value x) {
  Value ax = e.abs(x);
  static constexpr double kOdd[] = {-1.0 / 3,          2.0 / 15,           -17.0 / 315,
                                    62.0 / 2835,       -1382.0 / 155925,   21844.0 / 6081075,
                                    -929569.0 / 638512875, 6404582.0 / 10854718875.0,
                                    -443861162.0 / 1856156927625.0, 18888466084.0 / 194896477400625.0};
  Value x2 = e.mul(x, x);
  Value small = e.add(x, e.mul(e.mul(x, x2), e.horner(x2, kOdd)));
  Value t = emit_exp_f32(e, e.mul(ax, e.f(-2.0)));
  Value large = e.copysign(e.sub(e.f(1.0), e.div(e.mul(t, e.f(2.0)), e.add(e.f(1.0), t))), x);
  return e.select(e.cmp(Pred::OLT, ax, e.f(0.625)), small, large);   // NaN takes `large`: NaN
}

// C's pow rules: pow(x, +-0) = 1, pow(1, y) = 1 (even for NaN), negative x only for integer
// y (sign from its parity), pow(+-0, y<0) = inf, pow(+-0, y>0) = 0.
Value emit_powf(FloatEmitter& e, Value x, Value y) {
  mlir::OpBuilder& b = e.builder();
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  Value ax = e.abs(x);
  Value log_ax = b.create<mlir::math::LogOp>(e.loc(), ax);
  Value mag = b.create<mlir::math::ExpOp>(e.loc(), e.mul(y, log_ax));
  // Magnitude for x = +-0 and +-inf follows from exp(y * -inf) / exp(y * inf) already.
  Value y_int = e.cmp(Pred::OEQ, e.trunc(y), y);
  Value half_y = e.mul(y, e.f(0.5));
  Value y_odd = e.and_(y_int, e.cmp(Pred::ONE, e.trunc(half_y), half_y));
  Value x_neg = e.cmp(Pred::OLT, x, e.f(0.0));
  Value signed_mag = e.select(e.and_(x_neg, y_odd), e.neg(mag), mag);
  Value bad = e.and_(x_neg, e.cmp(Pred::ONE, e.trunc(y), y));
  bad = e.and_(bad, e.cmp(Pred::ONE, e.abs(y), e.f(inf)));
  Value result = e.select(bad, e.f(nan), signed_mag);
  // pow(-0, odd negative) = -inf, pow(-0, odd positive) = -0.
  Value neg_zero = e.and_(e.cmp(Pred::OEQ, x, e.f(0.0)), y_odd);
  result = e.select(neg_zero, e.copysign(mag, x), result);
  // pow(-1, +-inf) = 1 (C): |x| == 1 with infinite y.
  Value one_inf = e.and_(e.cmp(Pred::OEQ, ax, e.f(1.0)), e.cmp(Pred::OEQ, e.abs(y), e.f(inf)));
  result = e.select(one_inf, e.f(1.0), result);
  Value is_one = e.or_(e.cmp(Pred::OEQ, x, e.f(1.0)), e.cmp(Pred::OEQ, y, e.f(0.0)));
  return e.select(is_one, e.f(1.0), result);
}

// One rewrite of `op` (a lowered math op on f32/f64); returns false when it is left to MLIR's
// f32 approximation patterns.
bool rewrite_op(mlir::Operation* op) {
  mlir::Type type = op->getResult(0).getType();
  mlir::OpBuilder b(op);
  FloatEmitter e(b, op->getLoc(), type);
  Value x = op->getOperand(0);
  Value result;
  bool f64 = is_f64_like(type);
  if (mlir::isa<mlir::math::RsqrtOp>(op)) {
    result = e.div(e.f(1.0), e.sqrt(x));
  } else if (mlir::isa<mlir::math::PowFOp>(op)) {
    result = emit_powf(e, x, op->getOperand(1));
  } else if (mlir::isa<mlir::math::Exp2Op>(op)) {
    result = emit_exp2(e, x);
  } else if (mlir::isa<mlir::math::SinOp>(op)) {
    result = detail::emit_sincos(e, x, false);
  } else if (mlir::isa<mlir::math::CosOp>(op)) {
    result = detail::emit_sincos(e, x, true);
  } else if (!f64 && mlir::isa<mlir::math::ExpOp>(op)) {
    result = emit_exp_f32(e, x);
  } else if (!f64 && mlir::isa<mlir::math::TanhOp>(op)) {
    result = emit_tanh_f32(e, x);
  } else if (!f64) {
    return false;
  } else if (mlir::isa<mlir::math::ExpOp>(op)) {
    result = detail::emit_exp_f64(e, x);
  } else if (mlir::isa<mlir::math::LogOp>(op)) {
    result = detail::emit_log_f64(e, x, false);
  } else if (mlir::isa<mlir::math::Log2Op>(op)) {
    result = detail::emit_log_f64(e, x, true);
  } else if (mlir::isa<mlir::math::TanhOp>(op)) {
    result = detail::emit_tanh_f64(e, x);
  } else if (mlir::isa<mlir::math::ErfOp>(op)) {
    result = detail::emit_erf_f64(e, x);
  } else {
    return false;
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return true;
}

}  // namespace

void lower_math(mlir::ModuleOp module) {
  mlir::MLIRContext* ctx = module.getContext();
  ctx->getOrLoadDialect<mlir::arith::ArithDialect>();
  ctx->getOrLoadDialect<mlir::math::MathDialect>();
  ctx->getOrLoadDialect<mlir::scf::SCFDialect>();
  ctx->getOrLoadDialect<mlir::vector::VectorDialect>();

  // Our own rewrites first; they may create math.exp / math.log (pow, exp2), so repeat until
  // none is left that we handle.
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<mlir::Operation*> work;
    module.walk([&](mlir::Operation* op) {
      if (is_lowered_op(op)) work.push_back(op);
    });
    for (mlir::Operation* op : work) {
      mlir::Type type = op->getResult(0).getType();
      if (is_half_like(type)) {
        promote_half(op);
        changed = true;
      } else if (!is_f32_like(type) && !is_f64_like(type)) {
        throw MathLoweringError(describe(op) + ": unsupported type for math");
      } else if (mlir::isa<mlir::math::ErfOp>(op) && is_f64_like(type) &&
                 mlir::isa<mlir::VectorType>(type)) {
        unroll_vector(op);
        changed = true;
      } else if (rewrite_op(op)) {
        changed = true;
      }
    }
  }

  // f32 log, log2, erf: MLIR's polynomial approximations.
  mlir::RewritePatternSet patterns(ctx);
  mlir::populateMathPolynomialApproximationPatterns(patterns);
  if (mlir::failed(mlir::applyPatternsAndFoldGreedily(module, std::move(patterns))))
    throw MathLoweringError("math lowering did not converge");

  std::string leftover;
  module.walk([&](mlir::Operation* op) {
    if (leftover.empty() && op->getDialect() &&
        op->getDialect()->getNamespace() == "math" && !is_exact_math_op(op))
      leftover = describe(op) + ": no portable lowering for this math op";
  });
  if (!leftover.empty()) throw MathLoweringError(leftover);
}

}  // namespace quiver::ir
