// OpCall: checks and launches shared by every quiver::ops entry point (runtime/ops/ops.cpp).
#include "ops/op_call.h"

#include <cstring>
#include <limits>

#include "api/impl.h"

namespace quiver::ops::detail {

namespace {
constexpr size_t kIndexLimit = size_t{1} << 32;   // kernels index with uint32_t
constexpr uint32_t kMaxBlocksPerDim = 65535;      // Vulkan's guaranteed minimum

template <typename T>
quiver::detail::Arg scalar_arg(T v) {
  quiver::detail::Arg a;
  a.is_buffer = false;
  a.elem = quiver::detail::elem_of<T>();
  std::memcpy(a.scalar, &v, sizeof(T));
  return a;
}

std::string type_list(std::initializer_list<Elem> allowed) {
  std::string s;
  for (Elem e : allowed) {
    if (!s.empty()) s += ", ";
    s += std::string(quiver::detail::elem_name(e));
  }
  return s;
}
}  // namespace

LaunchValue::LaunchValue(const Operand& o) {
  arg.is_buffer = true;
  arg.elem = o.elem;
  arg.buffer = o.buffer;
}
LaunchValue::LaunchValue(uint32_t v) : arg(scalar_arg(v)) {}
LaunchValue::LaunchValue(float v) : arg(scalar_arg(v)) {}
LaunchValue::LaunchValue(bool v) : arg(scalar_arg(v)) {}

OpCall::OpCall(const Device& dev, std::string_view op) : dev_(dev), op_(op) {
  if (!dev_.impl()) fail("the Device is empty (moved-from)");
}

void OpCall::fail(const std::string& message) const {
  throw Error(ErrorCode::InvalidArgument, op_ + ": " + message);
}

void OpCall::require_buffer(const char* name, const Operand& o) const {
  if (o.buffer == nullptr) fail(std::string(name) + " is an empty Buffer (default-constructed or moved-from)");
  if (o.buffer->device() != dev_.impl())
    fail(std::string(name) + " was allocated on a different quiver::Device than the one the op runs on");
}

Elem OpCall::require_elem(const char* name, const Operand& o, std::initializer_list<Elem> allowed) const {
  require_buffer(name, o);
  for (Elem e : allowed)
    if (o.elem == e) return e;
  fail(std::string(name) + " is a Buffer<" + std::string(quiver::detail::elem_name(o.elem)) + ">; " + op_ +
       " takes Buffer<" + type_list(allowed) + ">");
}

Elem OpCall::require_float(const char* name, const Operand& o) const {
  return require_elem(name, o, {Elem::F32, Elem::BF16, Elem::F16});
}

void OpCall::require_same_elem(const char* name, const Operand& o, const char* ref_name, const Operand& ref) const {
  require_buffer(name, o);
  if (o.elem != ref.elem)
    fail(std::string(name) + " is a Buffer<" + std::string(quiver::detail::elem_name(o.elem)) + "> but " + ref_name +
         " is a Buffer<" + std::string(quiver::detail::elem_name(ref.elem)) +
         ">; they must have the same element type");
}

void OpCall::require_at_least(const char* name, const Operand& o, size_t needed, const std::string& expr) const {
  require_buffer(name, o);
  if (o.size < needed)
    fail(std::string(name) + " has " + std::to_string(o.size) + " elements, expected at least " + expr + " = " +
         std::to_string(needed));
}

void OpCall::require_exactly(const char* name, const Operand& o, size_t needed, const std::string& expr) const {
  require_buffer(name, o);
  if (o.size != needed)
    fail(std::string(name) + " has " + std::to_string(o.size) + " elements, expected " + expr + " = " +
         std::to_string(needed));
}

size_t OpCall::elements(std::initializer_list<size_t> dims, const std::string& expr) const {
  size_t total = 1;
  bool zero = false;
  for (size_t d : dims) zero = zero || d == 0;
  if (zero) return 0;
  for (size_t d : dims) {
    if (total > (kIndexLimit - 1) / d)
      fail(expr + " reaches 2^32 elements; the op library indexes tensors with 32-bit integers");
    total *= d;
  }
  return total;
}

uint32_t OpCall::dim(size_t v, const char* name) const {
  if (v >= kIndexLimit) fail(std::string(name) + " = " + std::to_string(v) + " does not fit in 32 bits");
  return static_cast<uint32_t>(v);
}

const Module& OpCall::library_module() const {
  if (!library_) library_ = library(dev_);
  return *library_;
}

bool OpCall::has_kernel(const std::string& name) const { return library_module().has_kernel(name); }

void OpCall::launch(const std::string& kernel, Grid grid, std::initializer_list<LaunchValue> args) const {
  std::vector<quiver::detail::Arg> packed;
  packed.reserve(args.size());
  for (const LaunchValue& v : args) packed.push_back(v.arg);
  library_module().kernel(kernel).launch_packed(grid, packed);
}

std::string elem_name(Elem e) { return std::string(quiver::detail::elem_name(e)); }

Grid OpCall::row_grid(size_t rows) const {
  if (rows <= kMaxBlocksPerDim) return Grid{static_cast<uint32_t>(rows), 1, 1};
  if (rows > size_t{kMaxBlocksPerDim} * kMaxBlocksPerDim)
    fail("rows = " + std::to_string(rows) + " exceeds 65535 * 65535 (one block per row)");
  return Grid{kMaxBlocksPerDim, static_cast<uint32_t>((rows + kMaxBlocksPerDim - 1) / kMaxBlocksPerDim), 1};
}

Grid stride_grid(size_t n) {
  size_t blocks = (n + 255) / 256;
  if (blocks > kMaxBlocksPerDim) blocks = kMaxBlocksPerDim;
  return Grid{static_cast<uint32_t>(blocks == 0 ? 1 : blocks), 1, 1};
}

}  // namespace quiver::ops::detail
