// Kernel::launch_packed: every argument is checked against the manifest before the backend sees
// the launch, so a wrong call throws quiver::Error naming the kernel and the argument and
// nothing runs. Backends then receive only well-formed launches (runtime/backends/backend.h).
//
// Rules (docs/abi.md, KERNEL_LANGUAGE.md "Parameters"):
//  - the argument count equals the manifest's parameter count;
//  - a buffer parameter (T* / const T*) takes a quiver::Buffer<T> of exactly that element type;
//    a `qv::vec<T, N>*` parameter takes a Buffer<T> of the element type T whose element count
//    is a multiple of N (the host has no vector types; the kernel sees size() / N vectors);
//  - a scalar parameter takes a host value of exactly that type (no implicit conversions:
//    passing an `int` where the kernel takes `uint32_t` is an error, because a silent
//    reinterpretation would hide sign bugs);
//  - every buffer belongs to the Device the module was loaded on;
//  - a vec<T, N>* parameter's buffer is aligned to N * sizeof(T) (only DLPack imports can fail this);
//  - each grid dimension is >= 1 and grid * block fits the uint32_t global ids.
// `bool` scalars are widened to a 32-bit 0/1 for every backend, as docs/abi.md specifies.
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "api/impl.h"

namespace quiver {
namespace detail {

// Elem mirrors format::ScalarType one to one, so converting is a cast; these checks keep the
// two enums from drifting apart.
static_assert(static_cast<int>(Elem::Bool) == static_cast<int>(format::ScalarType::Bool));
static_assert(static_cast<int>(Elem::I32) == static_cast<int>(format::ScalarType::I32));
static_assert(static_cast<int>(Elem::F16) == static_cast<int>(format::ScalarType::F16));
static_assert(static_cast<int>(Elem::BF16) == static_cast<int>(format::ScalarType::BF16));
static_assert(static_cast<int>(Elem::F64) == static_cast<int>(format::ScalarType::F64));

std::string_view elem_name(Elem e) {
  switch (e) {
    case Elem::Bool: return "bool";
    case Elem::I8: return "int8_t";
    case Elem::U8: return "uint8_t";
    case Elem::I16: return "int16_t";
    case Elem::U16: return "uint16_t";
    case Elem::I32: return "int32_t";
    case Elem::U32: return "uint32_t";
    case Elem::I64: return "int64_t";
    case Elem::U64: return "uint64_t";
    case Elem::F16: return "half";
    case Elem::BF16: return "bf16";
    case Elem::F32: return "float";
    case Elem::F64: return "double";
  }
  return "<invalid element type>";
}

namespace {

Elem to_elem(format::ScalarType t) { return static_cast<Elem>(static_cast<uint8_t>(t)); }

std::string param_list(const format::Kernel& k) {
  std::string s;
  for (const format::Param& p : k.params) {
    if (!s.empty()) s += ", ";
    s += p.name;
  }
  return s;
}

std::string expected_of(const format::Param& p) {
  std::string elem(elem_name(to_elem(p.type)));
  if (!p.is_buffer) return elem + " scalar";
  std::string s = "Buffer<" + elem + ">";
  if (p.vec_width > 1) {
    s += " (for vec<" + elem + ", " + std::to_string(p.vec_width) + ">*, element count a multiple of " +
         std::to_string(p.vec_width) + ")";
  }
  return s;
}

std::string got_of(const Arg& a) {
  std::string elem(elem_name(a.elem));
  return a.is_buffer ? "Buffer<" + elem + ">" : elem;
}

}  // namespace
}  // namespace detail

void Kernel::launch_packed(Grid grid, std::span<const detail::Arg> args) const {
  if (!module_) throw Error(ErrorCode::InvalidArgument, "quiver::Kernel is empty (moved-from)");
  const detail::ModuleImpl& m = *module_;
  const format::Kernel& k = m.manifest().kernels.at(index_);
  // Messages are built only when a check fails: every launch passes through here.
  auto fail = [&](const std::string& what) -> void {
    throw Error(ErrorCode::InvalidArgument, "kernel '" + k.name + "': " + what);
  };

  if (args.size() != k.params.size()) {
    fail("expected " + std::to_string(k.params.size()) + " argument" +
         (k.params.size() == 1 ? "" : "s") + " (" + detail::param_list(k) + "), got " +
         std::to_string(args.size()));
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) {
    fail("grid {" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
         std::to_string(grid.z) + "}: every dimension must be >= 1");
  }
  const std::array<uint32_t, 3> dims{grid.x, grid.y, grid.z};
  for (int d = 0; d < 3; ++d) {
    if (uint64_t(dims[d]) * k.block[d] > 0xFFFFFFFFull) {
      fail(std::string("grid.") + "xyz"[d] + " = " + std::to_string(dims[d]) + " blocks of " +
           std::to_string(k.block[d]) + " threads exceeds 2^32 - 1 threads (global ids are uint32_t)");
    }
  }

  std::vector<backend::LaunchArg> packed(args.size());
  std::vector<uint32_t> widened(args.size());   // bool scalars as 32-bit 0/1
  for (size_t i = 0; i < args.size(); ++i) {
    const format::Param& p = k.params[i];
    const detail::Arg& a = args[i];
    auto arg_name = [&] { return "argument " + std::to_string(i + 1) + " ('" + p.name + "')"; };
    const detail::Elem want = detail::to_elem(p.type);
    if (p.is_buffer != a.is_buffer || want != a.elem) {
      fail(arg_name() + ": expected " + detail::expected_of(p) + ", got " + detail::got_of(a));
    }
    if (p.is_buffer) {
      if (a.buffer == nullptr) fail(arg_name() + ": the Buffer is empty (default-constructed or moved-from)");
      if (a.buffer->device() != m.device()) {
        fail(arg_name() + ": the buffer was allocated on a different quiver::Device than the one '" +
             m.label() + "' was loaded on");
      }
      if (p.vec_width > 1) {
        // Vector loads (ld.global.v4 and the like) need the vector's own alignment; only an
        // imported (DLPack) buffer can have less.
        const size_t vec_bytes = size_t{p.vec_width} * format::size_of(p.type);
        if (a.buffer->alignment() < vec_bytes) {
          fail(arg_name() + ": the buffer's address is aligned to " + std::to_string(a.buffer->alignment()) +
               " bytes, but vec<" + std::string(detail::elem_name(want)) + ", " + std::to_string(p.vec_width) +
               "> values need " + std::to_string(vec_bytes));
        }
        const size_t elems = a.buffer->bytes() / format::size_of(p.type);
        if (elems % p.vec_width != 0) {
          fail(arg_name() + ": a Buffer<" + std::string(detail::elem_name(want)) + "> of " +
               std::to_string(elems) + " elements cannot hold whole vec<" +
               std::string(detail::elem_name(want)) + ", " + std::to_string(p.vec_width) +
               "> values (size must be a multiple of " + std::to_string(p.vec_width) + ")");
        }
      }
      packed[i].buffer = &a.buffer->backend();
    } else {
      if (p.vec_width > 1) {
        fail(arg_name() + ": vector scalars (vec<" + std::string(detail::elem_name(want)) + ", " +
             std::to_string(p.vec_width) + ">) cannot be passed by value in v1");
      }
      if (p.type == format::ScalarType::Bool) {
        widened[i] = a.scalar[0] != 0 ? 1u : 0u;
        packed[i].scalar = &widened[i];
        packed[i].scalar_size = sizeof(uint32_t);
      } else {
        packed[i].scalar = a.scalar;
        packed[i].scalar_size = format::size_of(p.type);
      }
    }
  }

  std::lock_guard lock(m.device()->mutex());
  if (detail::GraphImpl* graph = m.device()->recording_here()) {
    graph->add(module_, index_, grid, args, packed);
    return;
  }
  m.backend().launch(index_, grid, packed);
}

}  // namespace quiver
