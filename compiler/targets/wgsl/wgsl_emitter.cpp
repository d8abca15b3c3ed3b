// Values, types, arithmetic, GPU ops and structured control flow of the WGSL emitter
// (wgsl_emitter.h explains the value representation; memories are in wgsl_memory.cpp).
#include "targets/wgsl/wgsl_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"
#include "ir/dialect/QvDialect.h"
#include "ir/intrinsics.h"
#include "targets/target.h"

namespace quiver::compiler::wgsl {

namespace {

std::string print(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string print_op(mlir::Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os, mlir::OpPrintingFlags().skipRegions().elideLargeElementsAttrs());
  return s;
}

std::string u32_literal(uint64_t v) {
  char buf[32];
  if (v < 1024) std::snprintf(buf, sizeof buf, "%lluu", static_cast<unsigned long long>(v));
  else std::snprintf(buf, sizeof buf, "0x%llxu", static_cast<unsigned long long>(v));
  return buf;
}

uint32_t mask_of(unsigned width) { return width >= 32 ? 0xFFFFFFFFu : (1u << width) - 1u; }

// Why WGSL cannot hold `type`, or nothing when it can.
std::optional<std::string> unsupported(mlir::Type type) {
  if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(type)) return unsupported(shaped.getElementType());
  if (type.isF64())
    return "double is not expressible in WGSL (no f64 in WebGPU); build this kernel without wgsl "
           "(QV_TARGETS on the kernel, or --targets without wgsl)";
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(type); i && i.getWidth() > 64)
    return "integers wider than 64 bits are not expressible in WGSL";
  if (llvm::isa<mlir::FloatType>(type) && !type.isF32() && !type.isF16() && !type.isBF16())
    return "floating-point type " + print(type) + " is not expressible in WGSL";
  return std::nullopt;
}

}  // namespace

void check_types(mlir::func::FuncOp func, const format::Kernel& kernel) {
  auto check = [&](mlir::Type t, const std::string& where) {
    if (auto reason = unsupported(t)) throw TargetError(kernel.symbol, kTargetName, *reason + " (in " + where + ")");
  };
  for (size_t i = 0; i < func.getNumArguments(); ++i)
    check(func.getArgument(i).getType(),
          "parameter " + std::to_string(i) + (i < kernel.params.size() ? " '" + kernel.params[i].name + "'" : ""));
  func.walk([&](mlir::Operation* op) {
    std::string where = "'" + op->getName().getStringRef().str() + "'";
    for (mlir::Type t : op->getResultTypes()) check(t, where);
    for (mlir::Type t : op->getOperandTypes()) check(t, where);
    for (mlir::Region& region : op->getRegions())
      for (mlir::Block& block : region)
        for (mlir::Type t : block.getArgumentTypes()) check(t, where);
  });
}

bool uses_subgroups(mlir::func::FuncOp func) {
  bool found = false;
  func.walk([&](mlir::Operation* op) {
    if (llvm::isa<mlir::gpu::SubgroupReduceOp, mlir::gpu::ShuffleOp, mlir::gpu::SubgroupSizeOp,
                  mlir::gpu::LaneIdOp>(op))
      found = true;
  });
  return found;
}

KernelModule emit_kernel(mlir::func::FuncOp func, const format::Kernel& kernel, bool native_subgroups) {
  return detail::KernelEmitter(func, kernel, native_subgroups).run();
}

namespace detail {

KernelEmitter::KernelEmitter(mlir::func::FuncOp func, const format::Kernel& kernel, bool native_subgroups)
    : func_(func), kernel_(kernel), native_subgroups_(native_subgroups) {}

void KernelEmitter::fail(const std::string& reason) const {
  throw TargetError(kernel_.symbol, kTargetName, reason);
}

void KernelEmitter::fail_op(mlir::Operation* op, const std::string& reason) const {
  fail(reason + " (at '" + print_op(op) + "')");
}

std::string KernelEmitter::fresh(const char* prefix) { return prefix + std::to_string(counter_++); }

const std::string& KernelEmitter::name(mlir::Value v) {
  auto it = names_.find(v);
  if (it == names_.end()) {
    std::string s;
    llvm::raw_string_ostream os(s);
    v.print(os);
    fail("internal error: a value is used before the emitter named it: " + s);
  }
  return it->second;
}

void KernelEmitter::line(const std::string& text) {
  for (int i = 0; i < indent_; ++i) body_ << "  ";
  body_ << text << "\n";
}

void KernelEmitter::let(mlir::Value v, const std::string& expr) {
  // A copy of another immutable value (an index cast, a zero-extension within 32 bits): alias it.
  if (expr.size() > 1 && expr[0] == 'v' && expr.find_first_not_of("0123456789", 1) == std::string::npos &&
      type_of(v.getType(), v.getDefiningOp()) != "bool") {
    names_[v] = expr;
    return;
  }
  std::string n = fresh("v");
  line("let " + n + ": " + type_of(v.getType(), v.getDefiningOp()) + " = " + expr + ";");
  names_[v] = n;
}

void KernelEmitter::declare_var(mlir::Value v) {
  std::string n = fresh("r");
  line("var " + n + ": " + type_of(v.getType(), v.getDefiningOp()) + ";");
  names_[v] = n;
}

unsigned KernelEmitter::int_width(mlir::Type t) const {
  if (t.isIndex()) return 32;
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(t)) return i.getWidth();
  return 0;
}

std::string KernelEmitter::type_of(mlir::Type t, mlir::Operation* where) const {
  if (t.isInteger(1)) return "bool";
  unsigned w = int_width(t);
  if (w > 0 && w <= 32) return "u32";
  if (w == 64) return "vec2<u32>";
  if (t.isF32()) return "f32";
  std::string reason = "type " + print(t) + " has no WGSL representation";
  if (where) fail_op(where, reason);
  fail(reason);
}

std::string KernelEmitter::zero_of(mlir::Type t, mlir::Operation* where) const {
  std::string ty = type_of(t, where);
  if (ty == "bool") return "false";
  if (ty == "f32") return "0.0f";
  if (ty == "vec2<u32>") return "vec2<u32>(0u, 0u)";
  return "0u";
}

std::string KernelEmitter::sext(const std::string& x, unsigned width) {
  if (width >= 32) return "bitcast<i32>(" + x + ")";
  std::string s = std::to_string(32 - width) + "u";
  return "(bitcast<i32>(" + x + " << " + s + ") >> " + s + ")";
}

std::string KernelEmitter::wrap(const std::string& x, unsigned width) {
  if (width >= 32) return x;
  return "((" + x + ") & " + u32_literal(mask_of(width)) + ")";
}

std::string KernelEmitter::as_u32(mlir::Value v) {
  if (v.getType().isInteger(1)) return "select(0u, 1u, " + name(v) + ")";
  return name(v);
}

// Integer constants are u32 (or bool) literals; f32 constants are exact hexadecimal literals,
// except infinities and NaNs, which no WGSL literal or constant expression may produce: those
// go through a function call (never a constant expression) on their bits.
std::string KernelEmitter::constant(mlir::Operation* op) {
  auto c = llvm::cast<mlir::arith::ConstantOp>(op);
  mlir::Attribute value = c.getValue();
  if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(value)) {
    unsigned w = int_width(i.getType());
    if (w == 1) return i.getValue().isZero() ? "false" : "true";
    if (w == 0 || w > 32) fail_op(op, "integer constant of an unsupported type");
    return u32_literal(i.getValue().getZExtValue() & mask_of(w));
  }
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(value)) {
    if (!f.getType().isF32()) fail_op(op, "float constant of a type other than f32");
    float v = f.getValue().convertToFloat();
    if (!std::isfinite(v)) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      return "qv_f32_from_bits(" + u32_literal(bits) + ")";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(v));
    return buf;
  }
  fail_op(op, "constant of an unsupported kind (vector constants should have been scalarised)");
}

std::vector<std::string> KernelEmitter::result_vars(mlir::Operation* op) {
  std::vector<std::string> vars;
  for (mlir::Value r : op->getResults()) {
    declare_var(r);
    vars.push_back(names_[r]);
  }
  return vars;
}

void KernelEmitter::assign_yield(mlir::Operation* terminator, const std::vector<std::string>& to) {
  if (terminator->getNumOperands() != to.size())
    fail_op(terminator, "internal error: yield arity differs from its parent's results");
  for (size_t i = 0; i < to.size(); ++i) line(to[i] + " = " + name(terminator->getOperand(i)) + ";");
}

void KernelEmitter::emit_block(mlir::Block& block, const std::vector<std::string>& yield_to) {
  for (mlir::Operation& op : block) {
    if (llvm::isa<mlir::scf::YieldOp>(op)) {
      assign_yield(&op, yield_to);
    } else if (llvm::isa<mlir::func::ReturnOp>(op)) {
      if (op.getParentOp() != func_.getOperation()) line("return;");
    } else {
      emit_op(&op);
    }
  }
}

void KernelEmitter::emit_op(mlir::Operation* op) {
  if (emit_arith(op) || emit_math(op) || emit_memory(op) || emit_gpu(op) || emit_scf(op)) return;
  if (llvm::isa<mlir::func::CallOp, ir::qv::Dot4I8Op>(op)) return emit_call(op);
  if (llvm::isa<ir::qv::DeviceFenceOp>(op)) {
    std::string at;   // the call's file:line:col, from the front end
    if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
      at = " (at " + file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn()) + ")";
    fail("qv::device_fence has no WGSL form (WGSL orders storage memory within a workgroup only); limit the kernel "
         "with QV_TARGETS" + at);
  }
  if (auto poison = llvm::dyn_cast<mlir::ub::PoisonOp>(op))
    return let(poison.getResult(), zero_of(poison.getType(), op));
  if (op->getDialect() && op->getDialect()->getNamespace() == "cf")
    fail_op(op, "unstructured control flow reached the wgsl target; the IR must be structured (docs/ir.md)");
  fail_op(op, "operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
}

bool KernelEmitter::emit_arith(mlir::Operation* op) {
  namespace arith = mlir::arith;
  if (!op->getDialect() || op->getDialect()->getNamespace() != "arith") return false;
  if (emit_arith64(op)) return true;
  if (llvm::isa<arith::ConstantOp>(op)) {
    let(op->getResult(0), constant(op));
    return true;
  }
  mlir::Value r = op->getNumResults() == 1 ? op->getResult(0) : mlir::Value();
  auto operand = [&](unsigned i) { return name(op->getOperand(i)); };
  unsigned w = r ? int_width(r.getType()) : 0;
  bool is_bool = w == 1;
  auto bin = [&](const char* sym) { return operand(0) + " " + sym + " " + operand(1); };
  auto ibin = [&](const char* sym) {   // integer op that may carry out of the width
    if (is_bool) return "select(0u, 1u, " + operand(0) + ") " + sym + " select(0u, 1u, " + operand(1) + ")";
    return wrap(bin(sym), w);
  };
  auto from_bool_result = [&](const std::string& u32_expr) {
    return is_bool ? "((" + u32_expr + ") & 1u) != 0u" : u32_expr;
  };
  auto signed_bin = [&](const char* sym) {
    unsigned ow = int_width(op->getOperand(0).getType());
    return wrap("bitcast<u32>(" + sext(as_u32(op->getOperand(0)), ow) + " " + sym + " " +
                    sext(as_u32(op->getOperand(1)), ow) + ")",
                w);
  };
  auto signed_call = [&](const char* fn) {
    unsigned ow = int_width(op->getOperand(0).getType());
    return wrap(std::string("bitcast<u32>(") + fn + "(" + sext(operand(0), ow) + ", " + sext(operand(1), ow) + "))", w);
  };
  std::string e;
  if (llvm::isa<arith::AddIOp>(op)) e = from_bool_result(ibin("+"));
  else if (llvm::isa<arith::SubIOp>(op)) e = from_bool_result(ibin("-"));
  else if (llvm::isa<arith::MulIOp>(op)) e = from_bool_result(ibin("*"));
  else if (llvm::isa<arith::AndIOp>(op)) e = bin("&");
  else if (llvm::isa<arith::OrIOp>(op)) e = bin("|");
  else if (llvm::isa<arith::XOrIOp>(op)) e = is_bool ? bin("!=") : bin("^");
  else if (llvm::isa<arith::DivUIOp>(op)) e = bin("/");
  else if (llvm::isa<arith::RemUIOp>(op)) e = bin("%");
  else if (llvm::isa<arith::DivSIOp>(op)) e = signed_bin("/");
  else if (llvm::isa<arith::RemSIOp>(op)) e = signed_bin("%");
  else if (llvm::isa<arith::ShLIOp>(op)) e = wrap(bin("<<"), w);
  else if (llvm::isa<arith::ShRUIOp>(op)) e = bin(">>");
  else if (llvm::isa<arith::ShRSIOp>(op)) e = wrap("bitcast<u32>(" + sext(operand(0), w) + " >> " + operand(1) + ")", w);
  else if (llvm::isa<arith::MinUIOp>(op)) e = "min(" + operand(0) + ", " + operand(1) + ")";
  else if (llvm::isa<arith::MaxUIOp>(op)) e = "max(" + operand(0) + ", " + operand(1) + ")";
  else if (llvm::isa<arith::MinSIOp>(op)) e = signed_call("min");
  else if (llvm::isa<arith::MaxSIOp>(op)) e = signed_call("max");
  else if (llvm::isa<arith::AddFOp>(op)) e = bin("+");
  else if (llvm::isa<arith::SubFOp>(op)) e = bin("-");
  else if (llvm::isa<arith::MulFOp>(op)) e = bin("*");
  else if (llvm::isa<arith::DivFOp>(op)) e = bin("/");
  else if (llvm::isa<arith::RemFOp>(op)) e = bin("%");
  else if (llvm::isa<arith::NegFOp>(op)) e = "-" + operand(0);
  // NaN-exact minimum/maximum (WGSL's min/max leave NaN operands unspecified): NaN-propagating
  // for minimumf/maximumf, NaN-ignoring for minnumf/maxnumf.
  else if (llvm::isa<arith::MinimumFOp, arith::MaximumFOp, arith::MinNumFOp, arith::MaxNumFOp>(op)) {
    const char* fn = llvm::isa<arith::MinimumFOp, arith::MinNumFOp>(op) ? "min" : "max";
    bool propagate = llvm::isa<arith::MinimumFOp, arith::MaximumFOp>(op);
    std::string a = operand(0), b = operand(1);
    std::string plain = std::string(fn) + "(" + a + ", " + b + ")";
    e = propagate ? "select(select(" + plain + ", " + b + ", " + b + " != " + b + "), " + a + ", " + a + " != " + a + ")"
                  : "select(select(" + plain + ", " + a + ", " + b + " != " + b + "), " + b + ", " + a + " != " + a + ")";
  } else if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op)) {
    unsigned ow = int_width(cmp.getLhs().getType());
    using P = arith::CmpIPredicate;
    P p = cmp.getPredicate();
    std::string a = ow == 1 ? as_u32(cmp.getLhs()) : operand(0), b = ow == 1 ? as_u32(cmp.getRhs()) : operand(1);
    bool sgn = p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
    if (sgn) a = sext(a, ow), b = sext(b, ow);
    const char* sym = "==";
    switch (p) {
      case P::eq: sym = "=="; break;
      case P::ne: sym = "!="; break;
      case P::slt: case P::ult: sym = "<"; break;
      case P::sle: case P::ule: sym = "<="; break;
      case P::sgt: case P::ugt: sym = ">"; break;
      case P::sge: case P::uge: sym = ">="; break;
    }
    e = a + " " + sym + " " + b;
  } else if (auto cmp = llvm::dyn_cast<arith::CmpFOp>(op)) {
    using P = arith::CmpFPredicate;
    std::string a = operand(0), b = operand(1);
    std::string ord = "(" + a + " == " + a + " && " + b + " == " + b + ")";
    switch (cmp.getPredicate()) {
      case P::AlwaysFalse: e = "false"; break;
      case P::AlwaysTrue: e = "true"; break;
      case P::OEQ: e = a + " == " + b; break;
      case P::OGT: e = a + " > " + b; break;
      case P::OGE: e = a + " >= " + b; break;
      case P::OLT: e = a + " < " + b; break;
      case P::OLE: e = a + " <= " + b; break;
      case P::ONE: e = "(" + a + " < " + b + " || " + a + " > " + b + ")"; break;
      case P::ORD: e = ord; break;
      case P::UEQ: e = "!(" + a + " < " + b + " || " + a + " > " + b + ")"; break;
      case P::UGT: e = "!(" + a + " <= " + b + ")"; break;
      case P::UGE: e = "!(" + a + " < " + b + ")"; break;
      case P::ULT: e = "!(" + a + " >= " + b + ")"; break;
      case P::ULE: e = "!(" + a + " > " + b + ")"; break;
      case P::UNE: e = a + " != " + b; break;
      case P::UNO: e = "!" + ord; break;
    }
  } else if (auto sel = llvm::dyn_cast<arith::SelectOp>(op)) {
    if (!sel.getCondition().getType().isInteger(1)) fail_op(op, "select on a vector condition");
    e = "select(" + name(sel.getFalseValue()) + ", " + name(sel.getTrueValue()) + ", " + name(sel.getCondition()) + ")";
  } else if (llvm::isa<arith::ExtUIOp, arith::IndexCastUIOp>(op)) {
    // Zero-extension keeps the canonical value; an index cast may also narrow (then: mask).
    e = is_bool ? "(" + as_u32(op->getOperand(0)) + " & 1u) != 0u" : wrap(as_u32(op->getOperand(0)), w);
  } else if (llvm::isa<arith::ExtSIOp, arith::IndexCastOp>(op)) {
    unsigned ow = int_width(op->getOperand(0).getType());
    if (ow == 1) e = is_bool ? operand(0) : "select(0u, " + u32_literal(mask_of(w)) + ", " + operand(0) + ")";
    else if (is_bool) e = "(" + operand(0) + " & 1u) != 0u";
    else if (ow >= w) e = wrap(operand(0), w);
    else e = wrap("bitcast<u32>(" + sext(operand(0), ow) + ")", w);
  } else if (llvm::isa<arith::TruncIOp>(op)) {
    e = is_bool ? "(" + operand(0) + " & 1u) != 0u" : wrap(operand(0), w);
  } else if (llvm::isa<arith::SIToFPOp>(op)) {
    unsigned ow = int_width(op->getOperand(0).getType());
    e = ow == 1 ? "select(0.0f, -1.0f, " + operand(0) + ")" : "f32(" + sext(operand(0), ow) + ")";
  } else if (llvm::isa<arith::UIToFPOp>(op)) {
    e = "f32(" + as_u32(op->getOperand(0)) + ")";
  } else if (llvm::isa<arith::FPToSIOp>(op)) {
    e = is_bool ? "i32(" + operand(0) + ") != 0i" : wrap("bitcast<u32>(i32(" + operand(0) + "))", w);
  } else if (llvm::isa<arith::FPToUIOp>(op)) {
    e = is_bool ? "u32(" + operand(0) + ") != 0u" : wrap("u32(" + operand(0) + ")", w);
  } else if (auto cast = llvm::dyn_cast<arith::BitcastOp>(op)) {
    mlir::Type from = cast.getIn().getType(), to = cast.getType();
    if (from.isF32() && int_width(to) == 32) e = "bitcast<u32>(" + operand(0) + ")";
    else if (to.isF32() && int_width(from) == 32) e = "bitcast<f32>(" + operand(0) + ")";
    else if (from == to) e = operand(0);
    else fail_op(op, "bitcast between " + print(from) + " and " + print(to));
  } else {
    fail_op(op, "arith operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
  }
  let(r, e);
  return true;
}

bool KernelEmitter::emit_math(mlir::Operation* op) {
  namespace math = mlir::math;
  if (!op->getDialect() || op->getDialect()->getNamespace() != "math") return false;
  mlir::Value r = op->getResult(0);
  if (!r.getType().isF32() && !llvm::isa<math::CountLeadingZerosOp, math::CtPopOp, math::AbsIOp>(op))
    fail_op(op, "math on a type other than f32");
  if (is_int64(r.getType())) {
    if (!llvm::isa<math::AbsIOp>(op)) fail_op(op, "64-bit bit counting is not supported by the wgsl target");
    let(r, abs64(name(op->getOperand(0))));
    return true;
  }
  auto a = [&](unsigned i) { return name(op->getOperand(i)); };
  std::string e;
  if (llvm::isa<math::SqrtOp>(op)) e = "sqrt(" + a(0) + ")";
  else if (llvm::isa<math::FmaOp>(op)) e = "fma(" + a(0) + ", " + a(1) + ", " + a(2) + ")";
  else if (llvm::isa<math::AbsFOp>(op)) e = "abs(" + a(0) + ")";
  else if (llvm::isa<math::FloorOp>(op)) e = "floor(" + a(0) + ")";
  else if (llvm::isa<math::CeilOp>(op)) e = "ceil(" + a(0) + ")";
  else if (llvm::isa<math::RoundEvenOp>(op)) e = "round(" + a(0) + ")";   // WGSL round: ties to even
  else if (llvm::isa<math::TruncOp>(op)) e = "trunc(" + a(0) + ")";
  else if (llvm::isa<math::CopySignOp>(op))
    e = "bitcast<f32>((bitcast<u32>(" + a(0) + ") & 0x7fffffffu) | (bitcast<u32>(" + a(1) + ") & 0x80000000u))";
  else if (llvm::isa<math::CountLeadingZerosOp>(op) && int_width(r.getType()) == 32) e = "countLeadingZeros(" + a(0) + ")";
  else if (llvm::isa<math::CtPopOp>(op)) e = "countOneBits(" + a(0) + ")";
  else if (llvm::isa<math::AbsIOp>(op)) {
    unsigned w = int_width(r.getType());
    e = wrap("bitcast<u32>(abs(" + sext(a(0), w) + "))", w);
  } else fail_op(op, "math operation '" + op->getName().getStringRef().str() +
                         "' was not lowered by ir::lower_math and has no WGSL counterpart");
  let(r, e);
  return true;
}

bool KernelEmitter::emit_gpu(mlir::Operation* op) {
  namespace gpu = mlir::gpu;
  if (!op->getDialect() || op->getDialect()->getNamespace() != "gpu") return false;
  auto axis = [](gpu::Dimension d) { return d == gpu::Dimension::x ? "x" : d == gpu::Dimension::y ? "y" : "z"; };
  auto axis_index = [](gpu::Dimension d) { return d == gpu::Dimension::x ? 0 : d == gpu::Dimension::y ? 1 : 2; };
  if (auto o = llvm::dyn_cast<gpu::ThreadIdOp>(op)) {
    let(o.getResult(), std::string("qv_local_id.") + axis(o.getDimension()));
  } else if (auto o = llvm::dyn_cast<gpu::BlockIdOp>(op)) {
    let(o.getResult(), std::string("qv_group_id.") + axis(o.getDimension()));
  } else if (auto o = llvm::dyn_cast<gpu::GridDimOp>(op)) {
    let(o.getResult(), std::string("qv_group_count.") + axis(o.getDimension()));
  } else if (auto o = llvm::dyn_cast<gpu::BlockDimOp>(op)) {
    let(o.getResult(), u32_literal(kernel_.block[axis_index(o.getDimension())]));
  } else if (auto o = llvm::dyn_cast<gpu::GlobalIdOp>(op)) {
    int k = axis_index(o.getDimension());
    let(o.getResult(), std::string("qv_group_id.") + axis(o.getDimension()) + " * " + u32_literal(kernel_.block[k]) +
                           " + qv_local_id." + axis(o.getDimension()));
  } else if (llvm::isa<gpu::BarrierOp>(op)) {
    // __syncthreads orders both memories: storage as well as workgroup.
    line("storageBarrier();");
    line("workgroupBarrier();");
  } else if (auto o = llvm::dyn_cast<gpu::SubgroupSizeOp>(op)) {
    let(o.getResult(), native_subgroups_ ? "qv_subgroup_size" : "1u");
  } else if (auto o = llvm::dyn_cast<gpu::LaneIdOp>(op)) {
    let(o.getResult(), native_subgroups_ ? "qv_subgroup_lane" : "0u");
  } else if (auto o = llvm::dyn_cast<gpu::SubgroupReduceOp>(op)) {
    mlir::Type t = o.getValue().getType();
    unsigned w = int_width(t);
    std::string x = name(o.getValue());
    if (!native_subgroups_) {   // a subgroup of one invocation: the reduction is the value itself
      let(o.getResult(), x);
      return true;
    }
    using R = gpu::AllReduceOperation;
    R kind = o.getOp();
    if (w == 1) fail_op(op, "subgroup reduction of bool");
    if (w == 64) fail_op(op, "subgroup reduction of a 64-bit integer is not supported by the wgsl target");
    const char* fn = nullptr;
    bool is_signed = kind == R::MINSI || kind == R::MAXSI;
    switch (kind) {
      case R::ADD: fn = "subgroupAdd"; break;
      case R::MUL: fn = "subgroupMul"; break;
      case R::MINUI: case R::MINSI: case R::MINNUMF: case R::MINIMUMF: fn = "subgroupMin"; break;
      case R::MAXUI: case R::MAXSI: case R::MAXNUMF: case R::MAXIMUMF: fn = "subgroupMax"; break;
      case R::AND: fn = "subgroupAnd"; break;
      case R::OR: fn = "subgroupOr"; break;
      case R::XOR: fn = "subgroupXor"; break;
    }
    std::string e = is_signed ? wrap(std::string("bitcast<u32>(") + fn + "(" + sext(x, w) + "))", w)
                              : (w ? wrap(std::string(fn) + "(" + x + ")", w) : std::string(fn) + "(" + x + ")");
    let(o.getResult(), e);
  } else if (auto o = llvm::dyn_cast<gpu::ShuffleOp>(op)) {
    // The front end always shuffles across the whole subgroup (width = subgroup_size).
    mlir::Value width = o.getWidth();
    auto cast = width.getDefiningOp<mlir::arith::IndexCastUIOp>();
    if (!cast || !cast.getIn().getDefiningOp<gpu::SubgroupSizeOp>())
      fail_op(op, "a shuffle over a width other than the subgroup size is not supported by the wgsl target");
    std::string x = name(o.getValue()), off = name(o.getOffset());
    bool is_bool = o.getValue().getType().isInteger(1);
    if (!native_subgroups_) {
      let(o.getShuffleResult(), x);
      let(o.getValid(), off + " == 0u");
      return true;
    }
    std::string v = is_bool ? "select(0u, 1u, " + x + ")" : x;
    std::string e, valid;
    switch (o.getMode()) {
      case gpu::ShuffleMode::IDX: e = "subgroupShuffle(" + v + ", " + off + ")"; valid = off + " < qv_subgroup_size"; break;
      case gpu::ShuffleMode::XOR:
        e = "subgroupShuffleXor(" + v + ", " + off + ")";
        valid = "(qv_subgroup_lane ^ " + off + ") < qv_subgroup_size";
        break;
      case gpu::ShuffleMode::UP: e = "subgroupShuffleUp(" + v + ", " + off + ")"; valid = "qv_subgroup_lane >= " + off; break;
      case gpu::ShuffleMode::DOWN:
        e = "subgroupShuffleDown(" + v + ", " + off + ")";
        valid = "qv_subgroup_lane + " + off + " < qv_subgroup_size";
        break;
    }
    let(o.getShuffleResult(), is_bool ? e + " != 0u" : e);
    let(o.getValid(), valid);
  } else {
    fail_op(op, "gpu operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
  }
  return true;
}

void KernelEmitter::emit_call(mlir::Operation* op) {
  if (auto dot = llvm::dyn_cast<ir::qv::Dot4I8Op>(op)) {
    // dot4I8Packed's exact i32 sum of four byte products cannot overflow; adding the
    // accumulator in u32 wraps like dp4a.
    let(dot.getResult(), "bitcast<u32>(dot4I8Packed(" + name(dot.getA()) + ", " + name(dot.getB()) + ")) + " +
                             name(dot.getAcc()));
    return;
  }
  auto call = llvm::cast<mlir::func::CallOp>(op);
  fail_op(op, "call of '" + call.getCallee().str() + "' (device functions must be inlined; only intrinsics remain)");
}

bool KernelEmitter::emit_scf(mlir::Operation* op) {
  namespace scf = mlir::scf;
  if (auto o = llvm::dyn_cast<scf::IfOp>(op)) {
    std::vector<std::string> vars = result_vars(op);
    line("if (" + name(o.getCondition()) + ") {");
    ++indent_;
    emit_block(o.getThenRegion().front(), vars);
    --indent_;
    if (!o.getElseRegion().empty()) {
      line("} else {");
      ++indent_;
      emit_block(o.getElseRegion().front(), vars);
      --indent_;
    }
    line("}");
    return true;
  }
  if (auto o = llvm::dyn_cast<scf::ForOp>(op)) {
    // loop { if !(iv < ub) break; let args = vars; body; vars = yields; iv += step }: the let
    // copies make the yield's parallel assignment safe when it permutes the arguments.
    unsigned w = int_width(o.getInductionVar().getType());
    if (w == 64) fail_op(op, "a loop with a 64-bit counter is not supported by the wgsl target");
    bool unsigned_cmp = op->hasAttr("unsignedCmp");
    std::string iv = fresh("i");
    line("var " + iv + ": u32 = " + name(o.getLowerBound()) + ";");
    std::vector<std::string> vars;
    for (size_t k = 0; k < o.getNumResults(); ++k) {
      std::string v = fresh("r");
      line("var " + v + ": " + type_of(o.getResult(k).getType(), op) + " = " + name(o.getInitArgs()[k]) + ";");
      vars.push_back(v);
      names_[o.getResult(k)] = v;
    }
    std::string ub = name(o.getUpperBound());
    line("loop {");
    ++indent_;
    std::string cond = unsigned_cmp ? iv + " < " + ub : sext(iv, w) + " < " + sext(ub, w);
    line("if (!(" + cond + ")) { break; }");
    mlir::Block& body = *o.getBody();
    let(body.getArgument(0), iv);
    for (size_t k = 0; k < vars.size(); ++k) let(body.getArgument(k + 1), vars[k]);
    emit_block(body, vars);
    line(iv + " = " + wrap(name(body.getArgument(0)) + " + " + name(o.getStep()), w) + ";");
    --indent_;
    line("}");
    return true;
  }
  if (auto o = llvm::dyn_cast<scf::WhileOp>(op)) {
    std::vector<std::string> before_vars;
    for (mlir::Value init : o.getInits()) {
      std::string v = fresh("w");
      line("var " + v + ": " + type_of(init.getType(), op) + " = " + name(init) + ";");
      before_vars.push_back(v);
    }
    std::vector<std::string> after_vars = result_vars(op);
    line("loop {");
    ++indent_;
    mlir::Block& before = o.getBefore().front();
    for (size_t k = 0; k < before_vars.size(); ++k) let(before.getArgument(k), before_vars[k]);
    for (mlir::Operation& inner : before.without_terminator()) emit_op(&inner);
    auto cond = o.getConditionOp();
    for (size_t k = 0; k < after_vars.size(); ++k) line(after_vars[k] + " = " + name(cond.getArgs()[k]) + ";");
    line("if (!(" + name(cond.getCondition()) + ")) { break; }");
    mlir::Block& after = o.getAfter().front();
    for (size_t k = 0; k < after_vars.size(); ++k) let(after.getArgument(k), after_vars[k]);
    emit_block(after, before_vars);
    --indent_;
    line("}");
    return true;
  }
  if (auto o = llvm::dyn_cast<scf::IndexSwitchOp>(op)) {
    std::vector<std::string> vars = result_vars(op);
    if (is_int64(o.getArg().getType())) fail_op(op, "a switch on a 64-bit value is not supported by the wgsl target");
    line("switch (" + sext(name(o.getArg()), 32) + ") {");
    ++indent_;
    llvm::ArrayRef<int64_t> cases = o.getCases();
    for (size_t k = 0; k < cases.size(); ++k) {
      if (cases[k] < INT32_MIN || cases[k] > INT32_MAX) fail_op(op, "switch case value outside 32 bits");
      line("case " + std::to_string(cases[k]) + "i: {");
      ++indent_;
      emit_block(o.getCaseBlock(k), vars);
      --indent_;
      line("}");
    }
    line("default: {");
    ++indent_;
    emit_block(o.getDefaultBlock(), vars);
    --indent_;
    line("}");
    --indent_;
    line("}");
    return true;
  }
  if (auto o = llvm::dyn_cast<scf::ExecuteRegionOp>(op)) {
    if (!o.getRegion().hasOneBlock())
      fail_op(op, "scf.execute_region with several blocks is not supported by the wgsl target");
    std::vector<std::string> vars = result_vars(op);
    line("{");
    ++indent_;
    emit_block(o.getRegion().front(), vars);
    --indent_;
    line("}");
    return true;
  }
  if (op->getDialect() && op->getDialect()->getNamespace() == "scf")
    fail_op(op, "scf operation '" + op->getName().getStringRef().str() + "' is not supported by the wgsl target");
  return false;
}

KernelModule KernelEmitter::run() {
  if (func_.getBody().getBlocks().size() != 1)
    fail("unstructured control flow (several blocks) reached the wgsl target");
  uint64_t threads = uint64_t(kernel_.block[0]) * kernel_.block[1] * kernel_.block[2];
  if (threads == 0 || threads > 1024) fail("block of " + std::to_string(threads) + " invocations (WebGPU allows 1 to 1024)");
  analyse_memories();

  // Scalars: one uniform struct, member k = the k-th scalar parameter, 4 bytes each.
  mlir::Block& entry = func_.getBody().front();
  std::vector<std::pair<mlir::Value, std::string>> scalar_lets;
  uint32_t scalar_count = 0;
  for (unsigned i = 0; i < func_.getNumArguments(); ++i) {
    mlir::Value arg = entry.getArgument(i);
    if (llvm::isa<mlir::MemRefType>(arg.getType())) continue;
    std::string ty = type_of(arg.getType(), nullptr);
    if (ty == "bool") fail("parameter " + std::to_string(i) + " is i1 (bool scalars are i32 in the neutral IR)");
    std::string member = "s" + std::to_string(i);
    std::string comment = "   // parameter " + std::to_string(i) + " '" + kernel_.params[i].name + "' (" +
                          std::string(format::to_string(kernel_.params[i].type)) + ")";
    unsigned w = int_width(arg.getType());
    if (w == 64) {   // two 4-byte members (a vec2<u32> member would need 8-byte alignment)
      scalar_struct_ += "  " + member + "_lo: u32,\n  " + member + "_hi: u32," + comment + "\n";
      scalar_lets.push_back({arg, "vec2<u32>(qv_scalars." + member + "_lo, qv_scalars." + member + "_hi)"});
      scalar_count += 2;
      continue;
    }
    scalar_struct_ += "  " + member + ": " + ty + "," + comment + "\n";
    scalar_lets.push_back({arg, w && w < 32 ? wrap("qv_scalars." + member, w) : "qv_scalars." + member});
    ++scalar_count;
  }
  if (scalar_count) bindings_.push_back({uint32_t(func_.getNumArguments()), Binding::Kind::Uniform});
  for (auto& [arg, expr] : scalar_lets) let(arg, expr);

  emit_block(entry, {});

  std::ostringstream out;
  bool subgroups = native_subgroups_ && uses_subgroups(func_);
  if (subgroups) out << "enable subgroups;\n\n";
  out << "// quiver kernel '" << kernel_.name << "' (" << kernel_.symbol << ")"
      << (native_subgroups_ || !uses_subgroups(func_) ? "" : ", subgroups of one invocation") << "\n";
  out << declare_memories();
  if (scalar_count) {
    out << "struct QvScalars {\n" << scalar_struct_ << "}\n";
    out << "@group(0) @binding(" << func_.getNumArguments() << ") var<uniform> qv_scalars: QvScalars;\n";
  }
  if (!int64_helpers_.empty()) out << "// 64-bit integers as vec2<u32> (low, high).\n" << int64_helper_text();
  if (body_.str().find("qv_f32_from_bits(") != std::string::npos)
    out << "// Infinities and NaNs: a call is never a constant expression, which may not produce them.\n"
           "fn qv_f32_from_bits(bits: u32) -> f32 { return bitcast<f32>(bits); }\n";
  out << "\n@compute @workgroup_size(" << kernel_.block[0] << ", " << kernel_.block[1] << ", " << kernel_.block[2]
      << ")\nfn " << kernel_.symbol
      << "(@builtin(local_invocation_id) qv_local_id: vec3<u32>, @builtin(workgroup_id) qv_group_id: vec3<u32>,\n"
         "    @builtin(num_workgroups) qv_group_count: vec3<u32>";
  if (subgroups)
    out << ",\n    @builtin(subgroup_size) qv_subgroup_size: u32, @builtin(subgroup_invocation_id) qv_subgroup_lane: u32";
  out << ") {\n";
  for (const Memory& m : memories_)
    if (m.space == Memory::Space::Private)
      out << "  var " << m.name << ": array<" << m.word_type() << ", " << m.words() << ">;\n";
  out << body_.str() << "}\n";

  KernelModule module;
  module.entry = kernel_.symbol;
  module.needs_subgroups = subgroups;
  module.bindings = bindings_;
  std::sort(module.bindings.begin(), module.bindings.end(),
            [](const Binding& a, const Binding& b) { return a.index < b.index; });
  module.source = out.str();
  return module;
}

}  // namespace detail
}  // namespace quiver::compiler::wgsl
