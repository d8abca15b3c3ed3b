#include "targets_spirv_support.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "ir/normalize.h"

namespace quiver::compiler {
std::unique_ptr<Target> create_spirv_target();
}

namespace quiver::test {

std::vector<CompiledSpirv> compile_spirv_images(const std::string& module_text,
                                                const std::vector<format::Kernel>& kernels,
                                                const compiler::TargetOptions& options) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect, mlir::func::FuncDialect, mlir::gpu::GPUDialect,
                  mlir::index::IndexDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect, mlir::ub::UBDialect,
                  mlir::vector::VectorDialect>();
  ir::register_dialects(registry);   // the qv dialect too
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::string parse_errors;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
      parse_errors += d.str() + "\n";
      return mlir::success();
    });
    module = mlir::parseSourceString<mlir::ModuleOp>(module_text, &ctx);
  }
  if (!module) throw std::runtime_error("test IR does not parse:\n" + parse_errors);
  std::vector<CompiledSpirv> out;
  for (compiler::TargetImage& image : compiler::create_spirv_target()->compile(*module, kernels, options)) {
    if (image.data.size() % 4 != 0) throw std::runtime_error("SPIR-V image size is not a multiple of 4");
    CompiledSpirv compiled;
    compiled.words.resize(image.data.size() / 4);
    std::memcpy(compiled.words.data(), image.data.data(), image.data.size());
    compiled.image = std::move(image);
    out.push_back(std::move(compiled));
  }
  return out;
}

CompiledSpirv compile_spirv_ir(const std::string& module_text,
                               const std::vector<format::Kernel>& kernels,
                               const compiler::TargetOptions& options) {
  std::vector<CompiledSpirv> images = compile_spirv_images(module_text, kernels, options);
  if (images.size() != 1)
    throw std::runtime_error("the spirv target returned " + std::to_string(images.size()) +
                             " images, expected one");
  return std::move(images.front());
}

std::vector<CompiledSpirv> compile_spirv_each(const std::vector<TestKernel>& kernels) {
  std::string text = "module {\n";
  std::vector<format::Kernel> manifest;
  for (const TestKernel& k : kernels) {
    text += k.ir + "\n";
    manifest.push_back(k.manifest);
  }
  text += "}\n";
  std::vector<CompiledSpirv> images = compile_spirv_images(text, manifest);
  if (images.size() != kernels.size())
    throw std::runtime_error("the spirv target returned " + std::to_string(images.size()) + " images for " +
                             std::to_string(kernels.size()) + " kernels");
  return images;
}

CompiledSpirv compile_spirv(const TestKernel& kernel) {
  return compile_spirv_ir("module {\n" + kernel.ir + "\n}\n", {kernel.manifest});
}

const SpirvEntryPoint* SpirvModuleInfo::find(const std::string& name) const {
  for (const SpirvEntryPoint& e : entry_points)
    if (e.name == name) return &e;
  return nullptr;
}

namespace {

enum Op : uint32_t {
  OpEntryPoint = 15, OpExecutionMode = 16, OpCapability = 17, OpTypeInt = 21, OpTypeFloat = 22,
  OpTypeVector = 23, OpTypeRuntimeArray = 29, OpTypeStruct = 30, OpTypePointer = 32,
  OpFunction = 54, OpFunctionEnd = 56, OpVariable = 59, OpLoad = 61, OpStore = 62,
  OpAccessChain = 65, OpInBoundsAccessChain = 66, OpPtrAccessChain = 67, OpDecorate = 71,
};
enum Decoration : uint32_t { Block = 2, ArrayStride = 6, Aliased = 20, Binding = 33, DescriptorSet = 34 };
constexpr uint32_t kLocalSize = 17;

std::string literal_string(std::span<const uint32_t> words, size_t& used) {
  std::string s;
  for (used = 0; used < words.size(); ++used) {
    uint32_t w = words[used];
    for (int b = 0; b < 4; ++b) {
      char c = char((w >> (8 * b)) & 0xff);
      if (c == 0) {
        ++used;
        return s;
      }
      s.push_back(c);
    }
  }
  throw std::runtime_error("unterminated string literal in SPIR-V");
}

}  // namespace

SpirvModuleInfo reflect_spirv(std::span<const uint32_t> words) {
  if (words.size() < 5 || words[0] != 0x07230203u)
    throw std::runtime_error("not a SPIR-V module (bad magic or too short)");
  SpirvModuleInfo info;
  info.version = words[1];

  struct Type { uint32_t opcode; std::vector<uint32_t> operands; };
  std::map<uint32_t, Type> types;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> variables;   // id → (pointer type, class)
  std::map<uint32_t, std::map<uint32_t, uint32_t>> decorations;  // id → decoration → value
  std::map<uint32_t, size_t> entry_by_function;                  // function id → entry index
  std::map<uint32_t, std::set<uint32_t>> used_by_function;       // function id → variables
  uint32_t current_function = 0;

  for (size_t pos = 5; pos < words.size();) {
    uint32_t count = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (count == 0 || pos + count > words.size())
      throw std::runtime_error("truncated SPIR-V instruction at word " + std::to_string(pos));
    std::span<const uint32_t> ops = words.subspan(pos + 1, count - 1);
    switch (opcode) {
      case OpCapability: info.capabilities.push_back(ops[0]); break;
      case OpEntryPoint: {
        SpirvEntryPoint e;
        e.execution_model = ops[0];
        size_t used = 0;
        e.name = literal_string(ops.subspan(2), used);
        entry_by_function[ops[1]] = info.entry_points.size();
        info.entry_points.push_back(std::move(e));
        break;
      }
      case OpExecutionMode:
        if (ops[1] == kLocalSize && ops.size() >= 5) {
          auto it = entry_by_function.find(ops[0]);
          if (it == entry_by_function.end())
            throw std::runtime_error("LocalSize for a function that is no entry point");
          info.entry_points[it->second].local_size = std::array<uint32_t, 3>{ops[2], ops[3], ops[4]};
        }
        break;
      case OpTypeInt: case OpTypeFloat: case OpTypeVector: case OpTypeRuntimeArray:
      case OpTypeStruct: case OpTypePointer:
        types[ops[0]] = {opcode, std::vector<uint32_t>(ops.begin() + 1, ops.end())};
        break;
      case OpVariable: variables[ops[1]] = {ops[0], ops[2]}; break;
      case OpDecorate:
        decorations[ops[0]][ops[1]] = ops.size() > 2 ? ops[2] : 1;
        break;
      case OpFunction: current_function = ops[1]; break;
      case OpFunctionEnd: current_function = 0; break;
      case OpLoad: case OpAccessChain: case OpInBoundsAccessChain: case OpPtrAccessChain:
        if (current_function && variables.count(ops[2])) used_by_function[current_function].insert(ops[2]);
        break;
      case OpStore:
        if (current_function && variables.count(ops[0])) used_by_function[current_function].insert(ops[0]);
        break;
      default: break;
    }
    pos += count;
  }

  std::function<std::string(uint32_t)> type_name = [&](uint32_t id) -> std::string {
    auto it = types.find(id);
    if (it == types.end()) return "?";
    const Type& t = it->second;
    switch (t.opcode) {
      case OpTypeInt: return "i" + std::to_string(t.operands[0]);
      case OpTypeFloat: return "f" + std::to_string(t.operands[0]);
      case OpTypeVector: return "v" + std::to_string(t.operands[1]) + type_name(t.operands[0]);
      default: return "?";
    }
  };

  for (auto& [function, index] : entry_by_function) {
    SpirvEntryPoint& entry = info.entry_points[index];
    for (uint32_t var : used_by_function[function]) {
      auto deco = decorations.find(var);
      if (deco == decorations.end() || !deco->second.count(Binding)) continue;
      SpirvBinding b;
      b.binding = deco->second.at(Binding);
      if (deco->second.count(DescriptorSet)) b.set = deco->second.at(DescriptorSet);
      b.aliased = deco->second.count(Aliased) > 0;
      b.storage_class = variables[var].second;
      const Type& pointer = types.at(variables[var].first);
      uint32_t pointee = pointer.operands.at(1);
      const Type& st = types.at(pointee);
      b.block_decorated = decorations[pointee].count(Block) > 0;
      if (st.opcode == OpTypeStruct && st.operands.size() == 1) {
        uint32_t member = st.operands[0];
        const Type& mt = types.at(member);
        if (mt.opcode == OpTypeRuntimeArray) {
          b.runtime_array = true;
          b.element = type_name(mt.operands[0]);
          if (decorations[member].count(ArrayStride)) b.array_stride = decorations[member][ArrayStride];
        } else {
          b.element = type_name(member);
        }
      }
      entry.bindings.push_back(b);
    }
    std::sort(entry.bindings.begin(), entry.bindings.end(),
              [](const SpirvBinding& a, const SpirvBinding& b) { return a.binding < b.binding; });
  }
  return info;
}

std::string expected_element(const format::Param& param) {
  using T = format::ScalarType;
  std::string scalar;
  switch (param.type) {
    case T::Bool: scalar = param.is_buffer ? "i8" : "i32"; break;
    case T::I8: case T::U8: scalar = "i8"; break;
    case T::I16: case T::U16: scalar = "i16"; break;
    case T::I32: case T::U32: scalar = "i32"; break;
    case T::I64: case T::U64: scalar = "i64"; break;
    case T::F16: scalar = "f16"; break;
    case T::BF16: scalar = "i16"; break;   // carried as its bits (docs/ir.md)
    case T::F32: scalar = "f32"; break;
    case T::F64: scalar = "f64"; break;
  }
  return scalar;   // buffers of qv::vec<T, N> are arrays of T on SPIR-V (vectors are scalarised)
}

}  // namespace quiver::test
