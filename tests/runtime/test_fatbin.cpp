#include "test_fatbin.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "test_manifest_parts.h"

namespace quiver::test {
namespace {

using format::Access;
using format::Param;
using format::ScalarType;
using format::Target;

Param buf(std::string name, ScalarType t, Access access, uint32_t vec = 1) {
  return buffer_param(std::move(name), t, access, vec);
}
Param scalar(std::string name, ScalarType t) { return scalar_param(std::move(name), t); }
format::Kernel kernel(std::string name, std::string symbol, std::vector<Param> params,
                      std::array<uint32_t, 3> block, uint32_t shared, bool barrier,
                      std::vector<Target> targets = {Target::PTX, Target::CPU}) {
  return kernel_entry(std::move(name), std::move(symbol), std::move(params), block, shared, barrier,
                      std::move(targets));
}

}  // namespace

format::Manifest test_manifest() {
  format::Manifest m;
  m.compiler_version = "hand-written test kernels (tests/runtime/cpu_kernels.c)";
  m.source_hash = "0000000000000000";
  m.kernels.push_back(kernel("saxpy", "qv_k0_saxpy",
                             {buf("x", ScalarType::F32, Access::Read), buf("y", ScalarType::F32, Access::ReadWrite),
                              scalar("a", ScalarType::F32), scalar("n", ScalarType::U32)},
                             {256, 1, 1}, 0, false));
  m.kernels.push_back(kernel("block_sum", "qv_k1_block_sum",
                             {buf("in", ScalarType::F32, Access::Read), buf("out", ScalarType::F32, Access::ReadWrite),
                              scalar("n", ScalarType::U32)},
                             {256, 1, 1}, 256 * 4, true));
  m.kernels.push_back(kernel("tile_transpose", "qv_k2_tile_transpose",
                             {buf("in", ScalarType::I32, Access::Read), buf("out", ScalarType::I32, Access::ReadWrite),
                              scalar("width", ScalarType::U32)},
                             {16, 16, 1}, 16 * 17 * 4, true));
  m.kernels.push_back(kernel("affine64", "qv_k3_affine64",
                             {buf("in", ScalarType::F64, Access::Read), buf("out", ScalarType::F64, Access::ReadWrite),
                              scalar("s", ScalarType::F64), scalar("negate", ScalarType::Bool),
                              scalar("offset", ScalarType::I64), scalar("n", ScalarType::U32)},
                             {64, 1, 1}, 0, false));
  m.kernels.push_back(kernel("vec4_add", "qv_k4_vec4_add",
                             {buf("a", ScalarType::F32, Access::Read, 4), buf("b", ScalarType::F32, Access::ReadWrite, 4),
                              scalar("count4", ScalarType::U32)},
                             {64, 1, 1}, 0, false));
  m.kernels.push_back(kernel("stray_barrier", "qv_k5_stray_barrier",
                             {buf("out", ScalarType::F32, Access::ReadWrite)}, {1, 1, 1}, 0, false));
  m.kernels.push_back(kernel("block_ids", "qv_k7_block_ids", {buf("out", ScalarType::U32, Access::ReadWrite)},
                             {1, 1, 1}, 0, false));
  m.kernels.push_back(kernel("alignment", "qv_k8_alignment",
                             {buf("in", ScalarType::U8, Access::Read), buf("out", ScalarType::U32, Access::ReadWrite)},
                             {1, 1, 1}, 100, false));
  m.kernels.push_back(kernel("handshake", "qv_k9_handshake",
                             {buf("flags", ScalarType::U32, Access::ReadWrite), scalar("me", ScalarType::U32),
                              scalar("other", ScalarType::U32), scalar("timeout_ms", ScalarType::U32)},
                             {1, 1, 1}, 0, false));
  m.kernels.push_back(kernel("block_sum_loops", "qv_k10_block_sum_loops",
                             {buf("in", ScalarType::F32, Access::Read), buf("out", ScalarType::F32, Access::ReadWrite),
                              buf("calls", ScalarType::U32, Access::ReadWrite), scalar("n", ScalarType::U32)},
                             {256, 1, 1}, 256 * 4, true));
  m.kernels.push_back(kernel("gpu_only", "qv_k6_gpu_only", {buf("out", ScalarType::F32, Access::ReadWrite)},
                             {256, 1, 1}, 0, false, {Target::PTX}));
  return m;
}

namespace {
std::vector<std::byte> read_test_so(const std::string& built_at) {
  // The build tree's path first; next to the test executable when the build tree was copied
  // elsewhere (e.g. onto a GPU machine).
  std::vector<std::string> candidates{built_at};
  const std::string so_name = std::filesystem::path(built_at).filename().string();
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / so_name).string());
  for (const std::string& path : candidates) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
  }
  throw std::runtime_error("cannot find the test kernels " + so_name + " (looked at " + candidates.front() +
                           (candidates.size() > 1 ? " and " + candidates.back() : std::string()) + ")");
}
}  // namespace

std::vector<std::byte> cpu_kernels_so() { return read_test_so(QV_TEST_CPU_KERNELS_SO); }
std::vector<std::byte> cpu_kernels_future_abi_so() { return read_test_so(QV_TEST_CPU_ABI_FUTURE_SO); }

std::string host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unsupported";
#endif
}

std::vector<std::byte> make_fatbin(format::Manifest manifest, std::vector<std::byte> cpu_image,
                                   std::string arch) {
  return make_fatbin(std::move(manifest), std::move(cpu_image), std::vector<std::string>{std::move(arch)});
}

std::vector<std::byte> make_fatbin(format::Manifest manifest, std::vector<std::byte> cpu_image,
                                   std::vector<std::string> archs) {
  // Each image lists exactly the kernels whose manifest entry names its target, as the
  // format requires.
  std::vector<std::string> ptx_symbols, cpu_symbols;
  for (const format::Kernel& k : manifest.kernels) {
    for (Target t : k.targets) {
      if (t == Target::PTX) ptx_symbols.push_back(k.symbol);
      if (t == Target::CPU) cpu_symbols.push_back(k.symbol);
    }
  }
  // Not real PTX: the CPU backend must never look at it.
  const std::string ptx = "// placeholder PTX image for runtime tests\n.version 8.0\n.target sm_80\n";
  std::vector<std::byte> ptx_bytes(ptx.size());
  std::memcpy(ptx_bytes.data(), ptx.data(), ptx.size());
  std::vector<format::ImageInput> images;
  images.push_back({Target::PTX, "sm_80", std::move(ptx_bytes), std::move(ptx_symbols)});
  for (std::string& arch : archs) images.push_back({Target::CPU, std::move(arch), cpu_image, cpu_symbols});
  return format::write_fatbin(std::move(manifest), images, 3);
}

std::vector<std::byte> make_test_fatbin() {
  return make_fatbin(test_manifest(), cpu_kernels_so(), host_arch());
}

}  // namespace quiver::test
