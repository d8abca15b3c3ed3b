#include "targets/spirv/exp2_glsl.h"

#include <cstring>
#include <string_view>

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/IR/Builders.h"

namespace quiver::compiler::spirv_target {

size_t exp2_to_glsl_stand_in(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::math::Exp2Op> ops;
  module.walk([&](mlir::math::Exp2Op op) {
    if (op.getType().isF32()) ops.push_back(op);   // vectors are scalars by now (legalize)
  });
  for (mlir::math::Exp2Op op : ops) {
    mlir::OpBuilder b(op);
    mlir::Value stand_in = b.create<mlir::spirv::GLExpOp>(op.getLoc(), op.getOperand());
    op.getResult().replaceAllUsesWith(stand_in);
    op.erase();
  }
  return ops.size();
}

size_t retag_exp_as_exp2(std::vector<uint32_t>& words) {
  // SPIR-V 1.x: a 5-word header, then instructions whose first word is (word count << 16) | opcode.
  constexpr uint32_t kOpExtInstImport = 11, kOpExtInst = 12;
  constexpr uint32_t kGlslExp = 27, kGlslExp2 = 29;   // GLSL.std.450 instruction numbers
  constexpr std::string_view kGlsl = "GLSL.std.450";
  uint32_t glsl_set = 0;   // result ids start at 1
  size_t retagged = 0;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) break;   // malformed: spirv-val reports it
    if (opcode == kOpExtInstImport && count >= 3) {
      const char* name = reinterpret_cast<const char*>(&words[i + 2]);
      if (std::string_view(name, strnlen(name, (count - 2) * 4)) == kGlsl) glsl_set = words[i + 1];
    } else if (opcode == kOpExtInst && count >= 5 && glsl_set != 0 && words[i + 3] == glsl_set &&
               words[i + 4] == kGlslExp) {
      words[i + 4] = kGlslExp2;
      ++retagged;
    }
    i += count;
  }
  return retagged;
}

}  // namespace quiver::compiler::spirv_target
