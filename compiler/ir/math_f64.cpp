// quiver's own f64 math (MLIR's polynomial approximations are f32-only), and sin/cos for f32
// too (MLIR's f32 sin/cos reduce with a single constant and lose all relative accuracy near
// their zeros): classic range reduction plus Taylor/odd-series polynomials evaluated with fma.
// Accuracy (measured by tests/compiler/targets_cpu_math_test.cpp): a few ulp; sin/cos reduce
// accurately for |x| < 2^20 (f64) / 2^12 (f32).
#include "ir/math_emit.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace quiver::ir::detail {

using mlir::Value;
using Pred = mlir::arith::CmpFPredicate;

namespace {

// 1/k! for k = 0..13: exp(r) on |r| <= ln2/2, truncation error < 2^-60.
constexpr double kExpTaylor[] = {
    1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
    1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^11 (fdlibm's constants).
constexpr uint64_t kLn2Hi = 0x3FE62E42FEE00000ull;
constexpr uint64_t kLn2Lo = 0x3DEA39EF35793C76ull;

// exp(r) - 1 for |r| <= ln2/2 without cancellation: r * (1 + r/2 + r^2/6 + ...).
Value expm1_small(FloatEmitter& e, Value r) {
  static constexpr double kTail[] = {
      1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
      1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
      1.0 / 87178291200.0};
  return e.mul(r, e.horner(r, kTail));
}

}  // namespace

Value emit_exp_f64(FloatEmitter& e, Value x) {
  // exp(x) = 2^k * exp(r), k = round(x / ln2), r = x - k ln2 (two-part, with fma).
  // Beyond +-1400 the result is 0 or inf anyway; |k| <= 2020 keeps ldexp's factors normal.
  Value xc = e.clamp(x, -1400.0, 1400.0);
  Value k = e.roundeven(e.mul(xc, e.f(1.4426950408889634)));
  Value r = e.fma(e.neg(k), e.f_bits(kLn2Hi), xc);
  r = e.fma(e.neg(k), e.f_bits(kLn2Lo), r);
  Value p = e.horner(r, kExpTaylor);
  Value result = e.ldexp(p, k);
  return e.select(e.is_nan(x), x, result);
}

Value emit_log_f64(FloatEmitter& e, Value x, bool base2) {
  // x = m * 2^k with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(f), f = (m-1)/(m+1).
  Value tiny = e.cmp(Pred::OLT, x, e.f(0x1p-1022));
  Value xs = e.select(tiny, e.mul(x, e.f(0x1p54)), x);
  Value bits = e.bits(xs);
  Value k = e.isub(e.ashr(bits, e.i(52)), e.i(1023));
  Value m = e.from_bits(e.ior(e.iand(bits, e.i(0x000FFFFFFFFFFFFFll)), e.i(0x3FF0000000000000ll)));
  Value big = e.cmp(Pred::OGT, m, e.f(1.4142135623730951));
  m = e.select(big, e.mul(m, e.f(0.5)), m);
  Value kf = e.add(e.to_float(k), e.select(big, e.f(1.0), e.f(0.0)));
  kf = e.sub(kf, e.select(tiny, e.f(54.0), e.f(0.0)));

  Value f = e.div(e.sub(m, e.f(1.0)), e.add(m, e.f(1.0)));
  Value s = e.mul(f, f);
  // atanh(f)/f - 1 = s/3 + s^2/5 + ...; s <= 0.0295 so 11 terms reach 2^-60.
  static constexpr double kOdd[] = {1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13,
                                    1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
  Value two_f = e.add(f, f);
  Value log_m = e.fma(e.mul(two_f, s), e.horner(s, kOdd), two_f);

  Value result;
  if (base2) {
    result = e.fma(log_m, e.f(1.4426950408889634), kf);
  } else {
    Value lo = e.fma(kf, e.f_bits(kLn2Lo), log_m);
    result = e.fma(kf, e.f_bits(kLn2Hi), lo);
  }
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  result = e.select(e.cmp(Pred::OEQ, x, e.f(inf)), x, result);
  result = e.select(e.cmp(Pred::OEQ, x, e.f(0.0)), e.f(-inf), result);
  result = e.select(e.cmp(Pred::OLT, x, e.f(0.0)), e.f(nan), result);
  return e.select(e.is_nan(x), x, result);
}

Value emit_sincos(FloatEmitter& e, Value x, bool cosine) {
  // k = round(x * 2/pi), r = x - k pi/2 with pi/2 in pieces (fma), then sin(r) or cos(r)
  // and the sign by the quadrant k mod 4.
  bool f64 = e.width() == 64;
  Value k = e.roundeven(e.mul(x, e.f(0.63661977236758134308)));
  Value r;
  if (f64) {
    // fdlibm's 33-bit pieces: k * piece is exact for |k| < 2^20.
    r = e.fma(e.neg(k), e.f_bits(0x3FF921FB54400000ull), x);
    r = e.fma(e.neg(k), e.f_bits(0x3DD0B4611A600000ull), r);
    r = e.fma(e.neg(k), e.f_bits(0x3BA3198A2E000000ull), r);
    r = e.fma(e.neg(k), e.f(8.47842766036889956997e-32), r);
  } else {
    // float(pi/2), then the float nearest the rest, twice: x - k*c1 is exact in one fma.
    r = e.fma(e.neg(k), e.f_bits(0x3FC90FDBull), x);
    r = e.fma(e.neg(k), e.f_bits(0xB33BBD2Eull), r);
    r = e.fma(e.neg(k), e.f_bits(0xA6F72CEDull), r);
  }
  Value r2 = e.mul(r, r);
  // sin r = r + r^3 * S(r^2), cos r = 1 - r^2/2 + r^4 * C(r^2): Taylor, |r| <= pi/4.
  static constexpr double kSin[] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880,
                                    -1.0 / 39916800, 1.0 / 6227020800.0,
                                    -1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
                                    -1.0 / 121645100408832000.0};
  static constexpr double kCos[] = {1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                                    1.0 / 479001600, -1.0 / 87178291200.0,
                                    1.0 / 20922789888000.0, -1.0 / 6402373705728000.0,
                                    1.0 / 2432902008176640000.0};
  // f32 needs terms up to r^11 / r^12 only (truncation < 2^-30).
  llvm::ArrayRef<double> sin_terms(kSin, f64 ? 9 : 5);
  llvm::ArrayRef<double> cos_terms(kCos, f64 ? 9 : 5);
  Value sin_r = e.fma(e.mul(r, r2), e.horner(r2, sin_terms), r);
  Value cos_r = e.add(e.fma(e.mul(r2, r2), e.horner(r2, cos_terms), e.mul(r2, e.f(-0.5))), e.f(1.0));
  // Quadrant without float->int conversion (undefined for inf/NaN): q = k - 4 floor(k/4).
  Value q = e.sub(k, e.mul(e.f(4.0), e.floor(e.mul(k, e.f(0.25)))));
  if (cosine) q = e.add(q, e.f(1.0));   // cos x = sin(x + pi/2)
  Value odd = e.or_(e.cmp(Pred::OEQ, q, e.f(1.0)), e.cmp(Pred::OEQ, q, e.f(3.0)));
  Value negative = e.cmp(Pred::OGE, q, e.f(2.0));
  negative = e.and_(negative, e.cmp(Pred::OLT, q, e.f(4.0)));
  Value v = e.select(odd, cos_r, sin_r);
  v = e.select(negative, e.neg(v), v);
  // sin/cos of +-inf or NaN is NaN: x - x is NaN exactly then.
  Value not_finite = e.is_nan(e.sub(x, x));
  return e.select(not_finite, e.sub(x, x), v);
}

Value emit_tanh_f64(FloatEmitter& e, Value x) {
  // tanh|x| = em1 / (em1 + 2), em1 = expm1(2|x|); expm1 from the series when small (no
  // cancellation), from exp otherwise. tanh = 1 in double beyond |x| = 19.1.
  Value a = e.abs(x);
  Value two_a = e.clamp(e.add(a, a), 0.0, 40.0);
  Value small = e.cmp(Pred::OLT, two_a, e.f(0.34657359027997264));
  Value em1 = e.select(small, expm1_small(e, two_a), e.sub(emit_exp_f64(e, two_a), e.f(1.0)));
  Value t = e.div(em1, e.add(em1, e.f(2.0)));
  Value result = e.copysign(t, x);
  return e.select(e.is_nan(x), x, result);
}

Value emit_erf_f64(FloatEmitter& e, Value x) {
  // |x| < 3: erf x = 2/sqrt(pi) * x * exp(-x^2) * sum_n (2x^2)^n / (1*3*...*(2n+1))
  // (A&S 7.1.6), all terms positive, at most ~60 of them; the rounding of the sum grows with
  // the term count (up to ~20 ulp near |x| = 3, see the math test).
  // |x| >= 3: erf x = 1 - erfc x, erfc x = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x +
  // (3/2)/(x + ...)))) (A&S 7.1.14), 60 levels evaluated bottom-up (converged there; it is
  // too slow below 3); erfc's relative error then costs erf nothing.
  // exp(-x^2) uses x^2 = hi + lo exactly (fma). |x| >= 6: +-1.
  mlir::OpBuilder& b = e.builder();
  mlir::Location loc = e.loc();
  Value a = e.clamp(e.abs(x), 0.0, 6.0);
  auto gauss = [&](Value v) {   // exp(-v^2)
    Value v2 = e.mul(v, v);
    Value lo = e.fma(v, v, e.neg(v2));
    return e.mul(emit_exp_f64(e, e.neg(v2)), e.sub(e.f(1.0), lo));
  };

  Value s = e.clamp(a, 0.0, 3.0);
  Value ratio_num = e.mul(e.f(2.0), e.mul(s, s));
  // while (term > sum * 2^-56) { term *= 2x^2 / (2n+3); sum += term; n += 1 }
  mlir::Type t = e.type();
  Value one = e.f(1.0);
  auto loop = b.create<mlir::scf::WhileOp>(
      loc, mlir::TypeRange{t, t, t}, mlir::ValueRange{one, one, e.f(3.0)},
      [&](mlir::OpBuilder& bb, mlir::Location l, mlir::ValueRange args) {
        FloatEmitter ee(bb, l, t);
        Value go = ee.cmp(Pred::OGT, args[0], ee.mul(args[1], ee.f(0x1p-56)));
        bb.create<mlir::scf::ConditionOp>(l, go, args);
      },
      [&](mlir::OpBuilder& bb, mlir::Location l, mlir::ValueRange args) {
        FloatEmitter ee(bb, l, t);
        Value term = ee.div(ee.mul(args[0], ratio_num), args[2]);
        Value sum = ee.add(args[1], term);
        Value denom = ee.add(args[2], ee.f(2.0));
        bb.create<mlir::scf::YieldOp>(l, mlir::ValueRange{term, sum, denom});
      });
  Value series = e.mul(e.mul(e.mul(e.f(1.1283791670955126), s), gauss(s)), loop.getResult(1));

  Value c = e.clamp(a, 3.0, 6.0);
  Value frac = c;
  for (int k = 60; k >= 1; --k) frac = e.add(c, e.div(e.f(k * 0.5), frac));
  Value erfc = e.div(e.mul(gauss(c), e.f(0.56418958354775628695)), frac);
  Value tail = e.sub(e.f(1.0), erfc);

  Value r = e.select(e.cmp(Pred::OLT, a, e.f(3.0)), series, tail);
  r = e.clamp(r, 0.0, 1.0);
  Value result = e.copysign(r, x);
  return e.select(e.is_nan(x), x, result);
}

}  // namespace quiver::ir::detail
