// Checks the MSL path of a fat binary against its manifest, using SPIRV-Cross's reflection of
// the SPIR-V image as the independent reader (docs/abi.md "SPIR-V", "MSL / metallib"):
// - for every kernel with the msl target, SPIRV-Cross sees an entry point named by its symbol
//   whose storage buffers are exactly the manifest's parameters: one per parameter, at
//   (set 0, binding i), a runtime array of the element type for a buffer and a single value of
//   the scalar's type for a scalar, and never NonWritable when the parameter is written;
// - the MSL image reads back (runtime/backends/metal/msl_image.h), holds a translation unit per
//   kernel whose function exists in it, with parameter i at [[buffer(i)]].
// The SPIR-V image may also read a buffer through word views (Aliased i32 / ivec2 / ivec4 arrays
// at its binding, docs/abi.md); the MSL path's own SPIR-V has none.
// Every parameter must be used (true of the kernel suite and the op library): SPIR-V drops a
// parameter the body never touches, and this check would then name it.
// Usage: msl_reflection_check file.qfb. Exit 0 when every kernel agrees (and there is one).
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include <spirv_cross.hpp>

#include "format/fatbin.h"
#include "msl_image.h"

namespace {

using quiver::format::ScalarType;

struct Expected {
  bool is_float;
  uint32_t width;
};

Expected expected_element(const quiver::format::Param& p) {
  switch (p.type) {
    case ScalarType::Bool: return {false, p.is_buffer ? 8u : 32u};   // bool buffers are bytes, bool scalars i32
    case ScalarType::F16:    // 16-bit floats may travel as their bits on SPIR-V (docs/ir.md)
    case ScalarType::BF16: return {false, 16};
    case ScalarType::F32: return {true, 32};
    case ScalarType::F64: return {true, 64};
    default: return {false, quiver::format::size_of(p.type) * 8};
  }
}

bool is_float(spirv_cross::SPIRType::BaseType t) {
  using B = spirv_cross::SPIRType;
  return t == B::Half || t == B::Float || t == B::Double;
}

// Problems of one parameter's resource.
void check_resource(const spirv_cross::Compiler& spv, const spirv_cross::Resource& r, const quiver::format::Param& p,
                    const std::string& where, std::vector<std::string>& problems) {
  const spirv_cross::SPIRType& block = spv.get_type(r.base_type_id);
  if (block.basetype != spirv_cross::SPIRType::Struct || block.member_types.size() != 1) {
    problems.push_back(where + ": the resource is not a one-member struct");
    return;
  }
  const spirv_cross::SPIRType& member = spv.get_type(block.member_types[0]);
  bool runtime_array = member.array.size() == 1 && member.array[0] == 0 && member.array_size_literal[0];
  if (runtime_array != p.is_buffer)
    problems.push_back(where + ": SPIR-V has " + (runtime_array ? "a runtime array" : "a single value") +
                       ", the manifest a " + (p.is_buffer ? "buffer" : "scalar"));
  Expected e = expected_element(p);
  bool sixteen_bit_float = p.type == ScalarType::F16 || p.type == ScalarType::BF16;
  bool kind_ok = is_float(member.basetype) == e.is_float || (sixteen_bit_float && member.width == 16);
  if (!kind_ok || member.width != e.width)
    problems.push_back(where + ": element is " + (is_float(member.basetype) ? "float" : "integer") +
                       std::to_string(member.width) + ", the manifest says " + std::string(quiver::format::to_string(p.type)));
  if (member.vecsize != 1 && member.vecsize != p.vec_width)
    problems.push_back(where + ": element vector of " + std::to_string(member.vecsize) + ", the manifest vec_width " +
                       std::to_string(p.vec_width));
  bool non_writable = spv.get_buffer_block_flags(r.id).get(spv::DecorationNonWritable);
  if (non_writable && p.access == quiver::format::Access::ReadWrite)
    problems.push_back(where + ": NonWritable, but the kernel may write it");
}

// A word view of a buffer: decorated Aliased, a runtime array of i32, ivec2 or ivec4.
bool is_word_view(const spirv_cross::Compiler& spv, const spirv_cross::Resource& r) {
  if (!spv.has_decoration(r.id, spv::DecorationAliased)) return false;
  const spirv_cross::SPIRType& block = spv.get_type(r.base_type_id);
  if (block.basetype != spirv_cross::SPIRType::Struct || block.member_types.size() != 1) return false;
  const spirv_cross::SPIRType& m = spv.get_type(block.member_types[0]);
  bool runtime_array = m.array.size() == 1 && m.array[0] == 0 && m.array_size_literal[0];
  return runtime_array && (m.basetype == spirv_cross::SPIRType::Int || m.basetype == spirv_cross::SPIRType::UInt) && m.width == 32 &&
         (m.vecsize == 1 || m.vecsize == 2 || m.vecsize == 4);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: msl_reflection_check file.qfb\n";
    return 2;
  }
  try {
    auto fb = quiver::format::FatBinary::read_file(argv[1]);
    const auto& manifest = fb.manifest();
    int spirv_index = fb.find_image(quiver::format::Target::SPIRV);
    int msl_index = fb.find_image(quiver::format::Target::MSL);
    if (spirv_index < 0 || msl_index < 0) {
      std::cout << "FAIL  the fat binary needs both a spirv and an msl image\n";
      return 1;
    }
    // Each kernel's words: the first SPIR-V image holding it (the portable one; the SPIR-V target
    // writes an image per kernel and arch).
    const std::string spirv_arch = manifest.images[static_cast<size_t>(spirv_index)].arch;
    std::map<std::string, std::vector<uint32_t>> words_of;
    for (size_t i = 0; i < manifest.images.size(); ++i) {
      const auto& image = manifest.images[i];
      if (image.target != quiver::format::Target::SPIRV || image.arch != spirv_arch) continue;
      std::vector<std::byte> spirv_bytes = fb.image_data(i);
      std::vector<uint32_t> words(spirv_bytes.size() / 4);
      std::memcpy(words.data(), spirv_bytes.data(), words.size() * 4);
      for (const std::string& symbol : image.kernels) words_of.emplace(symbol, words);
    }
    std::vector<std::byte> msl_bytes = fb.image_data(static_cast<size_t>(msl_index));
    quiver::msl_image::Image msl;
    std::string error;
    if (!quiver::msl_image::parse(std::string_view(reinterpret_cast<const char*>(msl_bytes.data()), msl_bytes.size()),
                                  msl, error)) {
      std::cout << "FAIL  the MSL image does not parse: " << error << "\n";
      return 1;
    }

    size_t checked = 0, failures = 0;
    for (const auto& k : manifest.kernels) {
      bool has_msl = false;
      for (auto t : k.targets) has_msl = has_msl || t == quiver::format::Target::MSL;
      if (!has_msl) continue;
      ++checked;
      std::vector<std::string> problems;

      if (!words_of.count(k.symbol)) {
        std::cout << "FAIL  " << k.name << ": no " << spirv_arch << " SPIR-V image holds it\n";
        ++failures;
        continue;
      }
      spirv_cross::Compiler spv(words_of[k.symbol]);
      spv.set_entry_point(k.symbol, spv::ExecutionModelGLCompute);
      spirv_cross::ShaderResources resources = spv.get_shader_resources(spv.get_active_interface_variables());
      if (!resources.uniform_buffers.empty() || !resources.push_constant_buffers.empty())
        problems.push_back("uses uniform buffers or push constants");
      std::set<uint32_t> bindings, viewed;
      for (const spirv_cross::Resource& r : resources.storage_buffers) {
        uint32_t set = spv.get_decoration(r.id, spv::DecorationDescriptorSet);
        uint32_t binding = spv.get_decoration(r.id, spv::DecorationBinding);
        std::string where = "binding " + std::to_string(binding);
        if (set != 0 || binding >= k.params.size()) {
          problems.push_back(where + " (set " + std::to_string(set) + ") is no parameter");
          continue;
        }
        if (is_word_view(spv, r)) {
          // The Vulkan image reads some buffers through word views (docs/abi.md); the MSL path
          // lowers from SPIR-V without them, so they only need to view a buffer parameter.
          if (!k.params[binding].is_buffer) problems.push_back(where + ": a word view of a scalar parameter");
          viewed.insert(binding);
          continue;
        }
        if (!bindings.insert(binding).second) problems.push_back(where + " is bound twice");
        check_resource(spv, r, k.params[binding], where + " (" + k.params[binding].name + ")", problems);
      }
      for (uint32_t b : viewed) bindings.insert(b);
      // QV_SPECIALIZE parameters are specialization constants in the Vulkan image (SpecId = the
      // parameter's index, docs/abi.md), unread as bindings; the MSL image reads them as usual.
      for (const spirv_cross::SpecializationConstant& c : spv.get_specialization_constants()) {
        const bool scalar32 = c.constant_id < k.params.size() && !k.params[c.constant_id].is_buffer &&
                              (k.params[c.constant_id].type == quiver::format::ScalarType::I32 ||
                               k.params[c.constant_id].type == quiver::format::ScalarType::U32);
        if (!scalar32) problems.push_back("SpecId " + std::to_string(c.constant_id) + " names no 32-bit integer parameter");
        else bindings.insert(c.constant_id);
      }
      if (bindings.size() != k.params.size())
        problems.push_back("SPIR-V uses " + std::to_string(bindings.size()) + " of the manifest's " +
                           std::to_string(k.params.size()) + " parameters");

      const quiver::msl_image::KernelSource* unit = nullptr;
      for (const auto& u : msl.kernels)
        if (u.symbol == k.symbol) unit = &u;
      if (!unit) {
        problems.push_back("no MSL translation unit");
      } else {
        if (unit->buffer_index.size() != k.params.size()) problems.push_back("the MSL unit lists the wrong buffer count");
        for (uint32_t b : bindings) {
          if (b < unit->buffer_index.size() && unit->buffer_index[b] != b)
            problems.push_back("parameter " + std::to_string(b) + " at [[buffer(" + std::to_string(unit->buffer_index[b]) + ")]]");
          if (unit->source.find("[[buffer(" + std::to_string(b) + ")]]") == std::string::npos)
            problems.push_back("the MSL has no [[buffer(" + std::to_string(b) + ")]]");
        }
      }
      for (const std::string& p : problems) std::cout << "FAIL  " << k.name << ": " << p << "\n";
      if (problems.empty()) std::cout << "ok    " << k.name << ": " << k.params.size() << " parameters\n";
      failures += !problems.empty();
    }
    std::cout << checked << " kernels checked, " << failures << " disagree\n";
    return failures == 0 && checked > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
