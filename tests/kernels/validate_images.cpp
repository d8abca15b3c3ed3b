// Runs each target's own validator over every image of a fat binary: ptxas (for the image's
// arch) on PTX, spirv-val on SPIR-V (with the Vulkan version of the image's arch), and the CPU
// ABI version CPU images of this machine's architecture export. Usage:
// validate_images file.qfb workdir
// Exit 0 when every PTX and SPIR-V image was accepted (at least one of each); 77 (skipped)
// when SPIR-V passed but no ptxas exists to check the PTX.
// A cooperative-matrix image (docs/matrix.md) needs a spirv-val that knows
// SPV_KHR_cooperative_matrix (SPIRV-Tools 2023.4 and later); with an older one (Debian 12 has
// 2023.1) the image is checked structurally instead and the output says so: SPIR-V 1.6, the
// CooperativeMatrixKHR capability, a cooperative-matrix product in the module, and requirements
// that match its matrix types: the int8 configuration (16x16x32) exactly where it has int8
// matrices, whose products then carry the signed-components operands; the half one (16x16x16)
// where it has half matrices. A kernel's image in the cooperative-matrix arch that has no
// cooperative matrices (the SPIR-V target writes an image per kernel) must require no
// configuration, and goes to spirv-val like the portable ones.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <dlfcn.h>

#include "backends/cpu/cpu_abi.h"
#include "format/fatbin.h"

namespace fs = std::filesystem;

// Whether the spirv-val on PATH validates SPV_KHR_cooperative_matrix ("SPIRV-Tools v2023.4" on).
static bool spirv_val_knows_cooperative_matrix() {
  FILE* p = popen("spirv-val --version 2>&1", "r");
  if (!p) return false;
  char line[256] = {};
  std::string text;
  while (std::fgets(line, sizeof line, p)) text += line;
  pclose(p);
  unsigned year = 0, minor = 0;
  size_t at = text.find("SPIRV-Tools v");
  if (at == std::string::npos || std::sscanf(text.c_str() + at, "SPIRV-Tools v%u.%u", &year, &minor) != 2) return false;
  return year > 2023 || (year == 2023 && minor >= 4);
}

// Whether the module declares the CooperativeMatrixKHR capability (malformed words: false, for
// spirv-val to report).
static bool declares_cooperative_matrix(const std::vector<std::byte>& data) {
  if (data.size() % 4 != 0 || data.size() < 20) return false;
  std::vector<uint32_t> w(data.size() / 4);
  std::memcpy(w.data(), data.data(), data.size());
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, opcode = w[i] & 0xffffu;
    if (count == 0 || i + count > w.size()) return false;
    if (opcode == 17 && count == 2 && w[i + 1] == 6022) return true;   // OpCapability CooperativeMatrixKHR
    i += count;
  }
  return false;
}

// The structural check of a cooperative-matrix image; "" when it passes.
static std::string check_cooperative_matrix_words(const std::vector<std::byte>& data,
                                                  const std::vector<std::string>& requirements) {
  if (data.size() % 4 != 0 || data.size() < 20) return "not a whole number of SPIR-V words";
  std::vector<uint32_t> w(data.size() / 4);
  std::memcpy(w.data(), data.data(), data.size());
  if (w[0] != 0x07230203u) return "no SPIR-V magic";
  if (w[1] != 0x00010600u) return "not SPIR-V 1.6 (the version MLIR gives cooperative-matrix instructions)";
  bool capability = false, product = false, signed_product = false, int8 = false, half = false, workgroup = false;
  std::map<uint32_t, std::pair<bool, uint32_t>> scalar;   // id -> (is float, width) of OpTypeInt / OpTypeFloat
  std::map<uint32_t, uint32_t> constant;                  // id -> value of a one-word OpConstant
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, opcode = w[i] & 0xffffu;
    if (count == 0 || i + count > w.size()) return "a malformed instruction at word " + std::to_string(i);
    if (opcode == 17 && count == 2 && w[i + 1] == 6022) capability = true;   // OpCapability CooperativeMatrixKHR
    if (opcode == 21 && count >= 3) scalar[w[i + 1]] = {false, w[i + 2]};   // OpTypeInt
    if (opcode == 22 && count >= 3) scalar[w[i + 1]] = {true, w[i + 2]};    // OpTypeFloat
    if (opcode == 43 && count == 4) constant[w[i + 2]] = w[i + 3];          // OpConstant type, id, value
    // OpTypeCooperativeMatrixKHR result, component type, scope, rows, columns, use (constant ids).
    if (opcode == 4456 && count >= 7) {
      auto it = scalar.find(w[i + 2]);
      auto scope = constant.find(w[i + 3]);
      if (scope != constant.end() && scope->second == 2) {   // Workgroup: block tiles
        workgroup = true;
      } else {
        if (it != scalar.end() && !it->second.first && it->second.second == 8) int8 = true;
        if (it != scalar.end() && it->second.first && it->second.second == 16) half = true;
      }
    }
    if (opcode == 4459) {   // OpCooperativeMatrixMulAddKHR type, result, A, B, C [, operands]
      product = true;
      // MatrixASigned | MatrixBSigned | MatrixCSigned | MatrixResultSigned.
      if (count == 7 && (w[i + 6] & 0xfu) == 0xfu) signed_product = true;
    }
    i += count;
  }
  if (!capability) return "no CooperativeMatrixKHR capability";
  if (!product) return "no OpCooperativeMatrixMulAddKHR";
  auto requires_ = [&](const std::string& r) {
    return std::find(requirements.begin(), requirements.end(), r) != requirements.end();
  };
  const std::string int8_config = "cooperative_matrix:16x16x32:i8*i8+i32:subgroup";
  const std::string half_config = "cooperative_matrix:16x16x16:f16*f16+f32:subgroup";
  if (int8 != requires_(int8_config))
    return int8 ? "int8 cooperative matrices, but the image does not require " + int8_config
                : "no int8 cooperative matrix, but the image requires " + int8_config;
  if (int8 && !signed_product) return "int8 cooperative matrices, but no product with signed components";
  if (half && !requires_(half_config)) return "half cooperative matrices, but the image does not require " + half_config;
  const bool workgroup_products = std::any_of(requirements.begin(), requirements.end(), [](const std::string& r) {
    return r.rfind("cooperative_matrix_workgroup:", 0) == 0;
  });
  if (workgroup != (workgroup_products && requires_("extension:VK_NV_cooperative_matrix2")))
    return workgroup ? "workgroup-scope cooperative matrices, but the image requires no workgroup product of VK_NV_cooperative_matrix2"
                     : "no workgroup-scope cooperative matrix, but the image requires workgroup products";
  return "";
}

// A CPU image of this machine's architecture exports __qv_cpu_abi = the runtime's
// kCpuAbiVersion (docs/abi.md "CPU"): the compiler's copy of the number agrees with the
// runtime's. Images of other architectures cannot be opened here and are left out.
static bool check_cpu_abi(const std::vector<std::byte>& data, const std::string& arch, const fs::path& file) {
#if defined(__x86_64__)
  const bool host = arch.rfind("x86_64", 0) == 0;
#elif defined(__aarch64__)
  const bool host = arch == "aarch64";
#else
  const bool host = false;
#endif
  if (!host) return true;
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), data.size());
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  const void* abi = handle ? dlsym(handle, quiver::backend::cpu::kCpuAbiSymbol) : nullptr;
  uint32_t version = 0;
  if (abi) std::memcpy(&version, abi, sizeof version);
  const bool ok = version == quiver::backend::cpu::kCpuAbiVersion;
  std::cout << (ok ? "ok    " : "FAIL  ") << "CPU image (" << arch << ") exports " << quiver::backend::cpu::kCpuAbiSymbol
            << " = " << version << ", the runtime's CPU ABI is " << quiver::backend::cpu::kCpuAbiVersion
            << (handle ? "" : std::string(" (dlopen: ") + dlerror() + ")") << "\n";
  if (handle) dlclose(handle);
  return ok;
}

static std::string find_ptxas() {
  if (std::system("command -v ptxas >/dev/null 2>&1") == 0) return "ptxas";
  if (fs::exists("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  return {};
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: validate_images file.qfb workdir\n";
    return 2;
  }
  try {
    auto fb = quiver::format::FatBinary::read_file(argv[1]);
    fs::path work = argv[2];
    fs::create_directories(work);
    std::string ptxas = find_ptxas();
    const bool full_coop_validation = spirv_val_knows_cooperative_matrix();
    int ptx = 0, spirv = 0, failures = 0;
    const auto& images = fb.manifest().images;
    for (size_t i = 0; i < images.size(); ++i) {
      const auto& img = images[i];
      if (img.target == quiver::format::Target::CPU) {
        failures += !check_cpu_abi(fb.image_data(i), img.arch, work / ("image" + std::to_string(i) + ".so"));
        continue;
      }
      if (img.target != quiver::format::Target::PTX && img.target != quiver::format::Target::SPIRV) continue;
      auto data = fb.image_data(i);
      // PTX images carry the NUL that cuModuleLoadData needs; ptxas reads text without it.
      while (img.target == quiver::format::Target::PTX && !data.empty() && data.back() == std::byte{0}) data.pop_back();
      fs::path file = work / ("image" + std::to_string(i) + (img.target == quiver::format::Target::PTX ? ".ptx" : ".spv"));
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), data.size());
      std::string cmd;
      if (img.target == quiver::format::Target::PTX) {
        if (ptxas.empty()) {   // no CUDA toolkit on this machine: SPIR-V is still checked
          std::cout << "skip  PTX image " << i << " (" << img.arch << "): ptxas not found in PATH or /usr/local/cuda/bin\n";
          continue;
        }
        cmd = ptxas + " -arch=" + img.arch + " " + file.string() + " -o " + file.string() + ".cubin";
        ++ptx;
      } else {
        const bool coop = img.arch.find("_coopmat") != std::string::npos;
        const std::string env = img.arch.substr(0, img.arch.find('_'));   // "vulkan1.3_coopmat" -> vulkan1.3
        ++spirv;
        if (coop && !full_coop_validation && !declares_cooperative_matrix(data)) {
          auto configuration = [](const std::string& r) { return r.rfind("cooperative_matrix:", 0) == 0; };
          if (std::any_of(img.requirements.begin(), img.requirements.end(), configuration)) {
            std::cout << "FAIL  SPIR-V image " << i << " (" << img.arch
                      << ") has no cooperative matrix but requires a configuration\n";
            ++failures;
            continue;
          }
        } else if (coop && !full_coop_validation) {
          std::string problem = check_cooperative_matrix_words(data, img.requirements);
          std::cout << (problem.empty() ? "ok    " : "FAIL  ") << "structural check of SPIR-V image " << i << " ("
                    << img.arch << "; this spirv-val predates SPV_KHR_cooperative_matrix)"
                    << (problem.empty() ? "" : ": " + problem) << "\n";
          failures += !problem.empty();
          continue;
        }
        cmd = "spirv-val --target-env " + env + " " + file.string();
      }
      int rc = std::system((cmd + " 2>&1").c_str());
      std::cout << (rc == 0 ? "ok    " : "FAIL  ") << cmd << "\n";
      failures += rc != 0;
    }
    std::cout << ptx << " PTX and " << spirv << " SPIR-V images checked, " << failures << " rejected\n";
    if (failures || spirv == 0) return 1;
    return ptx > 0 ? 0 : 77;   // 77: ctest reports the PTX half as skipped (SKIP_RETURN_CODE)
  } catch (const std::exception& e) {
    std::cerr << "validate_images: " << e.what() << "\n";
    return 1;
  }
}
