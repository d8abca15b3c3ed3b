// Where each workgroup (qv::shared) allocation of a kernel lives inside the block's shared
// memory. The front end writes `workgroup_bytes` into the manifest's shared_bytes; the CPU
// target places the allocations at these offsets inside qv_cpu_ctx::shared. One rule for both:
// allocations in the order they appear in the function, each at the next 64-byte boundary;
// the total is rounded up to 64 bytes (0 when there is none).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace quiver::ir {

constexpr uint32_t kWorkgroupAlignment = 64;
// Arrays of whole KiB start 1024-byte aligned: warpgroup operands' swizzled panels need it
// (docs/matrix.md "Warpgroups"), and such arrays pack without padding among themselves.
constexpr uint32_t kWorkgroupPanelAlignment = 1024;
inline uint32_t workgroup_alignment(uint64_t bytes) {
  return bytes % kWorkgroupPanelAlignment == 0 ? kWorkgroupPanelAlignment : kWorkgroupAlignment;
}

struct WorkgroupSlot {
  mlir::memref::AllocaOp alloca;
  uint32_t offset = 0;
  uint32_t bytes = 0;
};

struct WorkgroupLayout {
  std::vector<WorkgroupSlot> slots;
  uint32_t total_bytes = 0;
};

// True for a memref in #gpu.address_space<workgroup>.
bool is_workgroup_memref(mlir::Type type);

// Throws std::runtime_error naming the function when an allocation has a dynamic shape or an
// element type without a fixed size, or when the total exceeds 4 GiB.
WorkgroupLayout workgroup_layout(mlir::func::FuncOp func);
uint32_t workgroup_bytes(mlir::func::FuncOp func);

}  // namespace quiver::ir
