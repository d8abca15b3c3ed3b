// The host side of one quiver::ops call: argument checks with messages that name the op and the
// argument, the choice of kernel by element type, and the launch. Every check runs before
// anything is launched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quiver/ops.h"
#include "quiver/runtime.h"

namespace quiver::ops::detail {

using quiver::detail::Elem;

// One launch argument: a buffer operand or a scalar of one of the kernel-language scalar types.
struct LaunchValue {
  quiver::detail::Arg arg;
  LaunchValue(const Operand& o);   // NOLINT: implicit, so launches read like kernel calls
  LaunchValue(uint32_t v);         // NOLINT
  LaunchValue(float v);            // NOLINT
  LaunchValue(bool v);             // NOLINT
};

class OpCall {
 public:
  OpCall(const Device& dev, std::string_view op);

  // Throws quiver::Error(InvalidArgument, "<op>: <message>").
  [[noreturn]] void fail(const std::string& message) const;

  // The operand is a non-empty Buffer allocated on this call's Device.
  void require_buffer(const char* name, const Operand& o) const;
  // Its element type is one of `allowed`; returns it.
  Elem require_elem(const char* name, const Operand& o, std::initializer_list<Elem> allowed) const;
  // Its element type is float, bf16 or half; returns it.
  Elem require_float(const char* name, const Operand& o) const;
  // Its element type equals that of `ref` (named ref_name).
  void require_same_elem(const char* name, const Operand& o, const char* ref_name, const Operand& ref) const;
  // Size checks; `expr` spells the expected count ("rows * cols").
  void require_at_least(const char* name, const Operand& o, size_t needed, const std::string& expr) const;
  void require_exactly(const char* name, const Operand& o, size_t needed, const std::string& expr) const;
  // a * b (* c), failing when the product reaches 2^32 (the kernels index with uint32_t).
  size_t elements(std::initializer_list<size_t> dims, const std::string& expr) const;
  // A dimension the kernels take as uint32_t.
  uint32_t dim(size_t v, const char* name) const;

  // One block per row: rows beyond 65535 continue in grid.y (Vulkan's guaranteed minimum per
  // dimension); kernels recompute the row as block_id_x + block_id_y * grid_dim_x.
  Grid row_grid(size_t rows) const;

  // Whether the library has kernel `name` for this Device's backend (kernels limited with
  // QV_TARGETS exist only where they were built).
  bool has_kernel(const std::string& name) const;

  // Launches the library kernel `name` (e.g. "rms_norm<float>") on this call's Device.
  void launch(const std::string& kernel, Grid grid, std::initializer_list<LaunchValue> args) const;

  const std::string& op() const { return op_; }

 private:
  // The op library on this Device, taken on first use and kept for the call's kernel lookups and
  // launch (each ops::library call is a lookup among the Device's loaded fat binaries).
  const Module& library_module() const;

  const Device& dev_;
  std::string op_;
  mutable std::optional<Module> library_;
};

// "float", "bf16", "half": the spelling kernel names use.
std::string elem_name(Elem e);
// Grid-stride launches of 256-thread blocks over n items, capped at 65535 blocks.
Grid stride_grid(size_t n);
// Elements per 16-byte chunk of the element-wise kernels (kernels/common.h, qvops::chunk_elems):
// 8 of half / bf16, 4 of float.
inline size_t chunk_elems(Elem e) { return e == Elem::F32 ? 4 : 8; }

}  // namespace quiver::ops::detail
