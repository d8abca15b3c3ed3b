// 64-bit integers in WGSL, which has only 32-bit ones: an i64 value is a `vec2<u32>` (x: low
// word, y: high word — the little-endian layout of the host's int64_t, so a buffer of them is an
// `array<vec2<u32>>` and needs no conversion). Bitwise ops work on the vector directly; the
// rest (carries, products, shifts, comparisons, division, float conversions) are small helper
// functions written into the module when a kernel uses them. The results are the exact
// two's-complement results of the C++ operations (wrapping), as on every other target.
#include <array>
#include <cstdio>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "targets/wgsl/wgsl_emitter.h"

namespace quiver::compiler::wgsl::detail {

namespace {

// The helpers, in dependency order (a helper only calls those above it).
struct Helper {
  const char* name;
  const char* text;
};
constexpr std::array<Helper, 14> kHelpers = {{
    {"qv_add64", "fn qv_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n"
                 "  let lo = a.x + b.x;\n"
                 "  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));\n}\n"},
    {"qv_sub64", "fn qv_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n"
                 "  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));\n}\n"},
    {"qv_neg64", "fn qv_neg64(a: vec2<u32>) -> vec2<u32> { return qv_sub64(vec2<u32>(0u, 0u), a); }\n"},
    // The full 64-bit product of two words, from 16-bit halves (no partial sum overflows).
    {"qv_mul32x32", "fn qv_mul32x32(a: u32, b: u32) -> vec2<u32> {\n"
                    "  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;\n"
                    "  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;\n"
                    "  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);\n"
                    "  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));\n}\n"},
    {"qv_mul64", "fn qv_mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {\n"
                 "  let p = qv_mul32x32(a.x, b.x);\n"
                 "  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);\n}\n"},
    // Shifts by n mod 64 (C++ leaves n >= 64 undefined; every target picks some result).
    {"qv_shl64", "fn qv_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {\n"
                 "  let s = n & 63u;\n"
                 "  if (s == 0u) { return a; }\n"
                 "  if (s >= 32u) { return vec2<u32>(0u, a.x << (s - 32u)); }\n"
                 "  return vec2<u32>(a.x << s, (a.y << s) | (a.x >> (32u - s)));\n}\n"},
    {"qv_shru64", "fn qv_shru64(a: vec2<u32>, n: u32) -> vec2<u32> {\n"
                  "  let s = n & 63u;\n"
                  "  if (s == 0u) { return a; }\n"
                  "  if (s >= 32u) { return vec2<u32>(a.y >> (s - 32u), 0u); }\n"
                  "  return vec2<u32>((a.x >> s) | (a.y << (32u - s)), a.y >> s);\n}\n"},
    {"qv_shrs64", "fn qv_shrs64(a: vec2<u32>, n: u32) -> vec2<u32> {\n"
                  "  let s = n & 63u;\n"
                  "  let hi = bitcast<i32>(a.y);\n"
                  "  if (s == 0u) { return a; }\n"
                  "  if (s >= 32u) { return vec2<u32>(bitcast<u32>(hi >> (s - 32u)), bitcast<u32>(hi >> 31u)); }\n"
                  "  return vec2<u32>((a.x >> s) | (a.y << (32u - s)), bitcast<u32>(hi >> s));\n}\n"},
    {"qv_ult64", "fn qv_ult64(a: vec2<u32>, b: vec2<u32>) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }\n"},
    {"qv_slt64", "fn qv_slt64(a: vec2<u32>, b: vec2<u32>) -> bool {\n"
                 "  let ah = bitcast<i32>(a.y); let bh = bitcast<i32>(b.y);\n"
                 "  return ah < bh || (ah == bh && a.x < b.x);\n}\n"},
    // Restoring division, one quotient bit per step: (quotient, remainder) as (x, y, z, w).
    // A zero divisor gives an all-ones quotient (undefined in C++; no trap, no hang).
    {"qv_udivrem64", "fn qv_udivrem64(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {\n"
                     "  var q = vec2<u32>(0u, 0u);\n"
                     "  var r = vec2<u32>(0u, 0u);\n"
                     "  for (var i = 63u; ; i = i - 1u) {\n"
                     "    let word = select(a.x, a.y, i >= 32u);\n"
                     "    r = qv_shl64(r, 1u);\n"
                     "    r.x = r.x | ((word >> (i & 31u)) & 1u);\n"
                     "    if (!qv_ult64(r, b)) {\n"
                     "      r = qv_sub64(r, b);\n"
                     "      if (i >= 32u) { q.y = q.y | (1u << (i - 32u)); } else { q.x = q.x | (1u << i); }\n"
                     "    }\n"
                     "    if (i == 0u) { break; }\n"
                     "  }\n"
                     "  return vec4<u32>(q, r);\n}\n"},
    // Truncating signed division: magnitudes, then the quotient's sign is the operands' and the
    // remainder's the dividend's.
    {"qv_sdivrem64", "fn qv_sdivrem64(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {\n"
                     "  let na = (a.y >> 31u) != 0u; let nb = (b.y >> 31u) != 0u;\n"
                     "  let m = qv_udivrem64(select(a, qv_neg64(a), na), select(b, qv_neg64(b), nb));\n"
                     "  return vec4<u32>(select(m.xy, qv_neg64(m.xy), na != nb), select(m.zw, qv_neg64(m.zw), na));\n}\n"},
    // To f32, rounded to nearest even in integer arithmetic: the value shifted so that its
    // leading one is bit 63, its top 24 bits rounded on the next 8 and a sticky bit for the rest;
    // f32() only ever sees an integer below 2^24 + 1 and the power-of-two scaling is exact. f32()
    // of a wider u32 is not relied on: SwiftShader (Chromium's WebGPU without a GPU) rounds it
    // twice, off by one ulp.
    {"qv_u64_to_f32", "fn qv_u64_to_f32(a: vec2<u32>) -> f32 {\n"
                      "  if (a.y == 0u && a.x < 0x1000000u) { return f32(a.x); }\n"
                      "  let n = select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);\n"
                      "  let m = qv_shl64(a, n);\n"
                      "  let keep = m.y >> 8u; let low = m.y & 0xffu;\n"
                      "  let up = low > 0x80u || (low == 0x80u && (m.x != 0u || (keep & 1u) != 0u));\n"
                      "  return ldexp(f32(keep + select(0u, 1u, up)), i32(40u - n));\n}\n"},
    {"qv_s64_to_f32", "fn qv_s64_to_f32(a: vec2<u32>) -> f32 {\n"
                      "  let neg = (a.y >> 31u) != 0u;\n"
                      "  let m = qv_u64_to_f32(select(a, qv_neg64(a), neg));\n"
                      "  return select(m, -m, neg);\n}\n"},
}};

// From f32 (truncating): the high word is floor(u / 2^32), exact in f32; u - hi * 2^32 is
// exact too (a multiple of u's ulp below 2^32, so at most 24 significant bits).
constexpr Helper kF32ToU64 = {"qv_f32_to_u64",
                              "fn qv_f32_to_u64(x: f32) -> vec2<u32> {\n"
                              "  let u = trunc(x);\n"
                              "  let hi = floor(u / 4294967296.0f);\n"
                              "  return vec2<u32>(u32(u - hi * 4294967296.0f), u32(hi));\n}\n"};
constexpr Helper kF32ToS64 = {"qv_f32_to_s64",
                              "fn qv_f32_to_s64(x: f32) -> vec2<u32> {\n"
                              "  let m = qv_f32_to_u64(abs(x));\n"
                              "  return select(m, qv_neg64(m), x < 0.0f);\n}\n"};

// Which helpers a helper calls (so that using one pulls in its dependencies).
std::vector<std::string> dependencies(const std::string& helper) {
  if (helper == "qv_neg64") return {"qv_sub64"};
  if (helper == "qv_mul64") return {"qv_mul32x32"};
  if (helper == "qv_udivrem64") return {"qv_shl64", "qv_ult64", "qv_sub64"};
  if (helper == "qv_sdivrem64") return {"qv_udivrem64", "qv_neg64"};
  if (helper == "qv_u64_to_f32") return {"qv_shl64"};
  if (helper == "qv_s64_to_f32") return {"qv_u64_to_f32", "qv_neg64"};
  if (helper == "qv_f32_to_s64") return {"qv_f32_to_u64", "qv_neg64"};
  return {};
}

}  // namespace

bool is_int64(mlir::Type t) {
  auto i = llvm::dyn_cast<mlir::IntegerType>(t);
  return i && i.getWidth() == 64;
}

std::string KernelEmitter::call64(const std::string& helper, const std::string& args) {
  std::vector<std::string> todo = {helper};
  while (!todo.empty()) {
    std::string h = todo.back();
    todo.pop_back();
    if (!int64_helpers_.insert(h).second) continue;
    for (const std::string& d : dependencies(h)) todo.push_back(d);
  }
  return helper + "(" + args + ")";
}

std::string KernelEmitter::int64_helper_text() const {
  std::string out;
  for (const Helper& h : kHelpers)
    if (int64_helpers_.count(h.name)) out += h.text;
  for (const Helper& h : {kF32ToU64, kF32ToS64})
    if (int64_helpers_.count(h.name)) out += h.text;
  return out;
}

bool KernelEmitter::emit_arith64(mlir::Operation* op) {
  namespace arith = mlir::arith;
  bool touches = false;
  for (mlir::Type t : op->getResultTypes()) touches |= is_int64(t);
  for (mlir::Type t : op->getOperandTypes()) touches |= is_int64(t);
  if (!touches) return false;
  mlir::Value r = op->getResult(0);
  auto a = [&](unsigned i) { return name(op->getOperand(i)); };
  auto pair = [&](unsigned i) { return a(0) + ", " + a(i); };
  std::string e;
  if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
    uint64_t v = llvm::cast<mlir::IntegerAttr>(c.getValue()).getValue().getZExtValue();
    char buf[64];
    std::snprintf(buf, sizeof buf, "vec2<u32>(0x%xu, 0x%xu)", unsigned(v & 0xffffffffu), unsigned(v >> 32));
    e = buf;
  } else if (llvm::isa<arith::AddIOp>(op)) e = call64("qv_add64", pair(1));
  else if (llvm::isa<arith::SubIOp>(op)) e = call64("qv_sub64", pair(1));
  else if (llvm::isa<arith::MulIOp>(op)) e = call64("qv_mul64", pair(1));
  else if (llvm::isa<arith::AndIOp>(op)) e = a(0) + " & " + a(1);
  else if (llvm::isa<arith::OrIOp>(op)) e = a(0) + " | " + a(1);
  else if (llvm::isa<arith::XOrIOp>(op)) e = a(0) + " ^ " + a(1);
  else if (llvm::isa<arith::ShLIOp>(op)) e = call64("qv_shl64", a(0) + ", " + a(1) + ".x");
  else if (llvm::isa<arith::ShRUIOp>(op)) e = call64("qv_shru64", a(0) + ", " + a(1) + ".x");
  else if (llvm::isa<arith::ShRSIOp>(op)) e = call64("qv_shrs64", a(0) + ", " + a(1) + ".x");
  else if (llvm::isa<arith::DivUIOp>(op)) e = call64("qv_udivrem64", pair(1)) + ".xy";
  else if (llvm::isa<arith::RemUIOp>(op)) e = call64("qv_udivrem64", pair(1)) + ".zw";
  else if (llvm::isa<arith::DivSIOp>(op)) e = call64("qv_sdivrem64", pair(1)) + ".xy";
  else if (llvm::isa<arith::RemSIOp>(op)) e = call64("qv_sdivrem64", pair(1)) + ".zw";
  else if (llvm::isa<arith::MinUIOp, arith::MaxUIOp, arith::MinSIOp, arith::MaxSIOp>(op)) {
    bool is_signed = llvm::isa<arith::MinSIOp, arith::MaxSIOp>(op);
    bool is_min = llvm::isa<arith::MinUIOp, arith::MinSIOp>(op);
    std::string less = call64(is_signed ? "qv_slt64" : "qv_ult64", pair(1));
    e = is_min ? "select(" + a(1) + ", " + a(0) + ", " + less + ")" : "select(" + a(0) + ", " + a(1) + ", " + less + ")";
  } else if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    P p = cmp.getPredicate();
    bool sgn = p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
    const char* lt = sgn ? "qv_slt64" : "qv_ult64";
    std::string x = a(0), y = a(1);
    switch (p) {
      case P::eq: e = "all(" + x + " == " + y + ")"; break;
      case P::ne: e = "any(" + x + " != " + y + ")"; break;
      case P::slt: case P::ult: e = call64(lt, x + ", " + y); break;
      case P::sge: case P::uge: e = "!" + call64(lt, x + ", " + y); break;
      case P::sgt: case P::ugt: e = call64(lt, y + ", " + x); break;
      case P::sle: case P::ule: e = "!" + call64(lt, y + ", " + x); break;
    }
  } else if (auto sel = llvm::dyn_cast<arith::SelectOp>(op)) {
    e = "select(" + name(sel.getFalseValue()) + ", " + name(sel.getTrueValue()) + ", " + name(sel.getCondition()) + ")";
  } else if (llvm::isa<arith::ExtUIOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::IndexCastOp, arith::TruncIOp>(op)) {
    mlir::Value in = op->getOperand(0);
    unsigned w = int_width(r.getType()), ow = int_width(in.getType());
    bool widen_signed = llvm::isa<arith::ExtSIOp, arith::IndexCastOp>(op);
    if (ow == 64 && w == 64) e = a(0);
    else if (ow == 64 && w == 1) e = "(" + a(0) + ".x & 1u) != 0u";   // trunc to i1
    else if (ow == 64) e = wrap(a(0) + ".x", w);                         // trunc / index cast
    else if (!widen_signed) e = "vec2<u32>(" + as_u32(in) + ", 0u)";
    else if (ow == 1) e = "select(vec2<u32>(0u, 0u), vec2<u32>(0xffffffffu, 0xffffffffu), " + a(0) + ")";
    else {
      std::string s = fresh("s");
      line("let " + s + ": i32 = " + sext(a(0), ow) + ";");
      e = "vec2<u32>(bitcast<u32>(" + s + "), bitcast<u32>(" + s + " >> 31u))";
    }
  } else if (llvm::isa<arith::SIToFPOp>(op)) e = call64("qv_s64_to_f32", a(0));
  else if (llvm::isa<arith::UIToFPOp>(op)) e = call64("qv_u64_to_f32", a(0));
  else if (llvm::isa<arith::FPToSIOp>(op)) e = call64("qv_f32_to_s64", a(0));
  else if (llvm::isa<arith::FPToUIOp>(op)) e = call64("qv_f32_to_u64", a(0));
  else if (llvm::isa<arith::BitcastOp>(op) && op->getOperand(0).getType() == r.getType()) e = a(0);
  else fail_op(op, "64-bit operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
  let(r, e);
  return true;
}

std::string KernelEmitter::abs64(const std::string& x) {
  return "select(" + x + ", " + call64("qv_neg64", x) + ", (" + x + ".y >> 31u) != 0u)";
}

}  // namespace quiver::compiler::wgsl::detail
