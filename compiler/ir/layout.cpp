#include "ir/layout.h"

#include <string>

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace quiver::ir {

bool is_workgroup_memref(mlir::Type type) {
  auto memref = mlir::dyn_cast<mlir::MemRefType>(type);
  if (!memref) return false;
  auto space = mlir::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(memref.getMemorySpace());
  return space && space.getValue() == mlir::gpu::AddressSpace::Workgroup;
}

namespace {

// Bytes of one element, or 0 when the type has no fixed size here.
uint64_t element_bytes(mlir::Type type) {
  if (auto vec = mlir::dyn_cast<mlir::VectorType>(type)) {
    if (vec.isScalable() || vec.getRank() != 1) return 0;
    return element_bytes(vec.getElementType()) * static_cast<uint64_t>(vec.getNumElements());
  }
  if (type.isIntOrFloat()) return (type.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

WorkgroupLayout workgroup_layout(mlir::func::FuncOp func) {
  WorkgroupLayout layout;
  uint64_t end = 0;
  std::string error;
  func.walk([&](mlir::memref::AllocaOp alloca) {
    mlir::MemRefType type = alloca.getType();
    if (!is_workgroup_memref(type) || !error.empty()) return;
    uint64_t elem = element_bytes(type.getElementType());
    if (!type.hasStaticShape() || elem == 0) {
      error = "workgroup allocation needs a static shape and a sized element type";
      return;
    }
    uint64_t bytes = elem * static_cast<uint64_t>(type.getNumElements());
    uint64_t offset = align_up(end, workgroup_alignment(bytes));
    end = offset + bytes;
    if (end > UINT32_MAX) {
      error = "workgroup memory exceeds 4 GiB";
      return;
    }
    layout.slots.push_back({alloca, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes)});
  });
  if (!error.empty())
    throw std::runtime_error("function '" + func.getSymName().str() + "': " + error);
  uint64_t total = align_up(end, kWorkgroupAlignment);
  if (total > UINT32_MAX)
    throw std::runtime_error("function '" + func.getSymName().str() +
                             "': workgroup memory exceeds 4 GiB");
  layout.total_bytes = static_cast<uint32_t>(total);
  return layout;
}

uint32_t workgroup_bytes(mlir::func::FuncOp func) { return workgroup_layout(func).total_bytes; }

}  // namespace quiver::ir
