#include "frontend/types.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/TemplateBase.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"

namespace quiver::frontend {

using format::ScalarType;

static bool is_qv_record(clang::QualType t, llvm::StringRef name) {
  const auto* rd = t->getAsCXXRecordDecl();
  if (!rd || rd->getName() != name) return false;
  const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(rd->getDeclContext());
  return ns && ns->getName() == "qv";
}

std::optional<ScalarType> scalar_kind(clang::QualType qt) {
  clang::QualType t = qt.getCanonicalType().getUnqualifiedType();
  if (const auto* et = t->getAs<clang::EnumType>()) t = et->getDecl()->getIntegerType().getCanonicalType();
  if (is_qv_record(t, "half")) return ScalarType::F16;
  if (is_qv_record(t, "bf16")) return ScalarType::BF16;
  const auto* bt = t->getAs<clang::BuiltinType>();
  if (!bt) return std::nullopt;
  switch (bt->getKind()) {
    case clang::BuiltinType::Bool: return ScalarType::Bool;
    case clang::BuiltinType::Char_S: case clang::BuiltinType::SChar: return ScalarType::I8;
    case clang::BuiltinType::Char_U: case clang::BuiltinType::UChar: return ScalarType::U8;
    case clang::BuiltinType::Short: return ScalarType::I16;
    case clang::BuiltinType::UShort: return ScalarType::U16;
    case clang::BuiltinType::Int: return ScalarType::I32;
    case clang::BuiltinType::UInt: return ScalarType::U32;
    case clang::BuiltinType::Long: case clang::BuiltinType::LongLong: return ScalarType::I64;
    case clang::BuiltinType::ULong: case clang::BuiltinType::ULongLong: return ScalarType::U64;
    case clang::BuiltinType::Float: return ScalarType::F32;
    case clang::BuiltinType::Double: return ScalarType::F64;
    case clang::BuiltinType::Float16: case clang::BuiltinType::Half: return ScalarType::F16;
    case clang::BuiltinType::BFloat16: return ScalarType::BF16;
    default: return std::nullopt;
  }
}

bool is_signed(ScalarType t) {
  return t == ScalarType::I8 || t == ScalarType::I16 || t == ScalarType::I32 || t == ScalarType::I64;
}
bool is_float(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 || t == ScalarType::F64;
}

mlir::Type value_type(mlir::MLIRContext& ctx, ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return mlir::IntegerType::get(&ctx, 1);
    case ScalarType::I8: case ScalarType::U8: return mlir::IntegerType::get(&ctx, 8);
    case ScalarType::I16: case ScalarType::U16: return mlir::IntegerType::get(&ctx, 16);
    case ScalarType::I32: case ScalarType::U32: return mlir::IntegerType::get(&ctx, 32);
    case ScalarType::I64: case ScalarType::U64: return mlir::IntegerType::get(&ctx, 64);
    case ScalarType::F16: return mlir::Float16Type::get(&ctx);
    case ScalarType::BF16: return mlir::BFloat16Type::get(&ctx);
    case ScalarType::F32: return mlir::Float32Type::get(&ctx);
    case ScalarType::F64: return mlir::Float64Type::get(&ctx);
  }
  return {};
}

mlir::Type memory_type(mlir::MLIRContext& ctx, ScalarType t) {
  return t == ScalarType::Bool ? mlir::IntegerType::get(&ctx, 8) : value_type(ctx, t);
}

bool is_shared_array(clang::QualType t, clang::QualType* element, uint64_t* count) {
  const auto* rd = t.getCanonicalType()->getAsCXXRecordDecl();
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(rd);
  if (!spec || !is_qv_record(t.getCanonicalType(), "shared")) return false;
  const auto& args = spec->getTemplateArgs();
  if (args.size() != 2) return false;
  if (element) *element = args[0].getAsType();
  if (count) *count = args[1].getAsIntegral().getZExtValue();
  return true;
}

bool is_vec(clang::QualType t, clang::QualType* element, uint32_t* count) {
  const auto* rd = t.getCanonicalType()->getAsCXXRecordDecl();
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(rd);
  if (!spec || !is_qv_record(t.getCanonicalType(), "vec")) return false;
  const auto& args = spec->getTemplateArgs();
  if (args.size() != 2) return false;
  if (element) *element = args[0].getAsType();
  if (count) *count = static_cast<uint32_t>(args[1].getAsIntegral().getZExtValue());
  return true;
}

bool is_matrix(clang::QualType t, clang::QualType* element, MatrixUse* use) {
  clang::QualType c = t.getCanonicalType().getUnqualifiedType();
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(c->getAsCXXRecordDecl());
  if (!spec || spec->getTemplateArgs().size() != 1) return false;
  MatrixUse u;
  if (is_qv_record(c, "matrix_a")) u = MatrixUse::A;
  else if (is_qv_record(c, "matrix_b")) u = MatrixUse::B;
  else if (is_qv_record(c, "matrix_acc")) u = MatrixUse::Acc;
  else return false;
  if (element) *element = spec->getTemplateArgs()[0].getAsType();
  if (use) *use = u;
  return true;
}

bool is_warpgroup_acc(clang::QualType t, clang::QualType* element, uint32_t* n) {
  clang::QualType c = t.getCanonicalType().getUnqualifiedType();
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(c->getAsCXXRecordDecl());
  if (!spec || spec->getTemplateArgs().size() != 2 || !is_qv_record(c, "warpgroup_acc")) return false;
  if (element) *element = spec->getTemplateArgs()[0].getAsType();
  if (n) *n = static_cast<uint32_t>(spec->getTemplateArgs()[1].getAsIntegral().getZExtValue());
  return true;
}

bool is_block_acc(clang::QualType t, clang::QualType* element, uint32_t* m, uint32_t* n) {
  clang::QualType c = t.getCanonicalType().getUnqualifiedType();
  const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(c->getAsCXXRecordDecl());
  if (!spec || spec->getTemplateArgs().size() != 3 || !is_qv_record(c, "block_acc")) return false;
  if (element) *element = spec->getTemplateArgs()[0].getAsType();
  if (m) *m = static_cast<uint32_t>(spec->getTemplateArgs()[1].getAsIntegral().getZExtValue());
  if (n) *n = static_cast<uint32_t>(spec->getTemplateArgs()[2].getAsIntegral().getZExtValue());
  return true;
}

bool value_element(clang::QualType t, clang::QualType* element) {
  return is_vec(t, element) || is_matrix(t, element) || is_warpgroup_acc(t, element) || is_block_acc(t, element);
}

bool is_value_record(clang::QualType t) {
  clang::QualType c = t.getCanonicalType().getUnqualifiedType();
  return is_qv_record(c, "half") || is_qv_record(c, "bf16") || is_vec(c) || is_matrix(c) || is_warpgroup_acc(c) ||
         is_block_acc(c);
}

mlir::Type storage_type(mlir::MLIRContext& ctx, clang::QualType t) {
  clang::QualType elem;
  uint32_t n = 0;
  if (is_vec(t, &elem, &n)) {
    auto k = scalar_kind(elem);
    if (!k || *k == ScalarType::Bool) return {};
    return mlir::VectorType::get({n}, value_type(ctx, *k));
  }
  MatrixUse use;
  if (is_matrix(t, &elem, &use)) {
    auto k = scalar_kind(elem);
    if (!k) return {};
    // int8 operands are 16 x 32 (A) and 32 x 16 (B): 512 elements (docs/ir.md "Matrix tiles").
    if (use != MatrixUse::Acc && *k == ScalarType::I8) return mlir::VectorType::get({512}, value_type(ctx, *k));
    bool ok = use == MatrixUse::Acc ? (*k == ScalarType::F32 || *k == ScalarType::I32)
                                    : (*k == ScalarType::F16 || *k == ScalarType::BF16);
    return ok ? mlir::VectorType::get({256}, value_type(ctx, *k)) : mlir::Type();
  }
  if (is_warpgroup_acc(t, &elem, &n)) {
    auto k = scalar_kind(elem);
    bool ok = k && (*k == ScalarType::F32 || *k == ScalarType::I32) && n >= 16 && n <= 256 && n % 16 == 0;
    return ok ? mlir::VectorType::get({n / 2}, value_type(ctx, *k)) : mlir::Type();
  }
  uint32_t m = 0;
  if (is_block_acc(t, &elem, &m, &n)) {
    auto k = scalar_kind(elem);
    bool ok = (k == ScalarType::F32 || k == ScalarType::I32) && m >= 16 && n >= 16 && m % 16 == 0 && n % 16 == 0 &&
              m <= 1024 && n <= 1024;
    return ok ? mlir::VectorType::get({m, n}, value_type(ctx, *k)) : mlir::Type();
  }
  if (auto k = scalar_kind(t)) return memory_type(ctx, *k);
  return {};
}

bool has_qv_annotation(const clang::Decl* d, llvm::StringRef what) {
  for (const auto* a : d->specific_attrs<clang::AnnotateAttr>())
    if (a->getAnnotation() == what) return true;
  if (const auto* fd = llvm::dyn_cast<clang::FunctionDecl>(d))
    if (const clang::FunctionDecl* pattern = fd->getTemplateInstantiationPattern(); pattern && pattern != fd)
      return has_qv_annotation(pattern, what);
  return false;
}

std::string canonical_type_name(clang::QualType qt) {
  clang::QualType t = qt.getCanonicalType().getUnqualifiedType();
  if (auto k = scalar_kind(t)) {
    switch (*k) {
      case ScalarType::Bool: return "bool";
      case ScalarType::I8: return "int8_t";
      case ScalarType::U8: return "uint8_t";
      case ScalarType::I16: return "int16_t";
      case ScalarType::U16: return "uint16_t";
      case ScalarType::I32: return "int32_t";
      case ScalarType::U32: return "uint32_t";
      case ScalarType::I64: return "int64_t";
      case ScalarType::U64: return "uint64_t";
      case ScalarType::F16: return "half";
      case ScalarType::BF16: return "bf16";
      case ScalarType::F32: return "float";
      case ScalarType::F64: return "double";
    }
  }
  if (const auto* spec = llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(
          t->getAsCXXRecordDecl())) {
    if (is_matrix(t)) return spec->getName().str() + "<" + canonical_type_name(spec->getTemplateArgs()[0].getAsType()) + ">";
    if (is_warpgroup_acc(t))
      return "warpgroup_acc<" + canonical_type_name(spec->getTemplateArgs()[0].getAsType()) + ", " +
             llvm::toString(spec->getTemplateArgs()[1].getAsIntegral(), 10) + ">";
    if (is_block_acc(t))
      return "block_acc<" + canonical_type_name(spec->getTemplateArgs()[0].getAsType()) + ", " +
             llvm::toString(spec->getTemplateArgs()[1].getAsIntegral(), 10) + ", " +
             llvm::toString(spec->getTemplateArgs()[2].getAsIntegral(), 10) + ">";
    if (spec->getName() == "vec" && spec->getTemplateArgs().size() == 2)
      return "vec<" + canonical_type_name(spec->getTemplateArgs()[0].getAsType()) + ", " +
             llvm::toString(spec->getTemplateArgs()[1].getAsIntegral(), 10) + ">";
  }
  return t.getAsString();
}

static std::string canonical_argument(const clang::TemplateArgument& a) {
  switch (a.getKind()) {
    case clang::TemplateArgument::Type: return canonical_type_name(a.getAsType());
    case clang::TemplateArgument::Integral: {
      if (a.getIntegralType()->isBooleanType()) return a.getAsIntegral().getBoolValue() ? "true" : "false";
      return llvm::toString(a.getAsIntegral(), 10);
    }
    case clang::TemplateArgument::Pack: {
      std::string s;
      for (const auto& p : a.pack_elements()) s += (s.empty() ? "" : ", ") + canonical_argument(p);
      return s;
    }
    default: {
      std::string s;
      llvm::raw_string_ostream os(s);
      a.print(clang::PrintingPolicy(clang::LangOptions()), os, /*IncludeType=*/false);
      return s;
    }
  }
}

std::string canonical_kernel_name(const clang::FunctionDecl* fd) {
  std::string name = fd->getNameAsString();
  if (const auto* args = fd->getTemplateSpecializationArgs()) {
    std::string list;
    for (const auto& a : args->asArray()) list += (list.empty() ? "" : ", ") + canonical_argument(a);
    name += "<" + list + ">";
  }
  return name;
}

std::string symbol_for(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (ok) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "k_" + out;
  return out;
}

}  // namespace quiver::frontend
