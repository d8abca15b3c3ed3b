#include "hsaco_notes.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace quiver::test {
namespace {

size_t indent_of(const std::string& line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  size_t end = s.find_last_not_of(" \t\r");
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

// ".key:   value" -> (".key", "value").
bool split_key(const std::string& text, std::string& key, std::string& value) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  key = trim(text.substr(0, colon));
  value = trim(text.substr(colon + 1));
  return true;
}

bool to_u64(const std::string& s, uint64_t& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtoull(s.c_str(), &end, 10);
  return end && *end == '\0';
}

bool set_kernel_field(HsacoKernelMeta& k, const std::string& key, const std::string& value, std::string& error) {
  uint64_t* number = nullptr;
  if (key == ".name") k.name = value;
  else if (key == ".symbol") k.symbol = value;
  else if (key == ".kernarg_segment_size") number = &k.kernarg_segment_size;
  else if (key == ".kernarg_segment_align") number = &k.kernarg_segment_align;
  else if (key == ".group_segment_fixed_size") number = &k.group_segment_fixed_size;
  else if (key == ".private_segment_fixed_size") number = &k.private_segment_fixed_size;
  else if (key == ".max_flat_workgroup_size") number = &k.max_flat_workgroup_size;
  else if (key == ".wavefront_size") number = &k.wavefront_size;
  if (number && !to_u64(value, *number)) {
    error = "kernel field " + key + " is not a number: '" + value + "'";
    return false;
  }
  return true;
}

bool set_arg_field(HsacoArg& a, const std::string& key, const std::string& value, std::string& error) {
  if (key == ".offset" || key == ".size") {
    if (!to_u64(value, key == ".offset" ? a.offset : a.size)) {
      error = "argument field " + key + " is not a number: '" + value + "'";
      return false;
    }
  } else if (key == ".value_kind") {
    a.value_kind = value;
  } else if (key == ".address_space") {
    a.address_space = value;
  }
  return true;
}

std::string join(std::span<const uint64_t> v) {
  std::string s;
  for (uint64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

bool parse_readelf_notes(const std::string& text, HsacoMeta& meta, std::string& error) {
  meta = HsacoMeta{};
  std::istringstream in(text);
  std::string line;
  bool in_kernels = false;
  std::string list_key;   // the indent-4 key whose list items follow (".args", ".reqd_workgroup_size")
  bool saw_kernels = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string t = trim(line);
    size_t indent = indent_of(line);
    if (t.rfind("amdhsa.target:", 0) == 0) {
      std::string key;
      split_key(t, key, meta.target);
      in_kernels = false;
      continue;
    }
    if (t == "amdhsa.kernels:") {
      in_kernels = saw_kernels = true;
      continue;
    }
    if (!in_kernels || t.empty()) continue;
    if (indent == 0) {   // the next top-level key ends the kernel list
      in_kernels = false;
      continue;
    }
    std::string key, value;
    if (indent == 2 && t.rfind("- ", 0) == 0) {   // a new kernel; its first field follows the dash
      meta.kernels.emplace_back();
      list_key.clear();
      t = trim(t.substr(2));
      indent = 4;
    }
    if (meta.kernels.empty()) {
      error = "a kernel field before the first kernel: '" + t + "'";
      return false;
    }
    HsacoKernelMeta& k = meta.kernels.back();
    if (indent == 4) {
      if (!split_key(t, key, value)) {
        error = "malformed kernel line '" + t + "'";
        return false;
      }
      if (value.empty()) list_key = key;
      else if (!set_kernel_field(k, key, value, error)) return false;
      continue;
    }
    if (list_key == ".reqd_workgroup_size" && t.rfind("- ", 0) == 0) {
      uint64_t v = 0;
      if (!to_u64(trim(t.substr(2)), v)) {
        error = "malformed .reqd_workgroup_size entry '" + t + "'";
        return false;
      }
      k.reqd_workgroup_size.push_back(v);
      continue;
    }
    if (list_key == ".args") {
      if (t.rfind("- ", 0) == 0) {
        k.args.emplace_back();
        t = trim(t.substr(2));
      }
      if (k.args.empty() || !split_key(t, key, value)) {
        error = "malformed .args line '" + t + "'";
        return false;
      }
      if (!set_arg_field(k.args.back(), key, value, error)) return false;
    }
  }
  if (!saw_kernels) {
    error = "no 'amdhsa.kernels:' in the readelf output";
    return false;
  }
  for (const HsacoKernelMeta& k : meta.kernels)
    if (k.name.empty()) {
      error = "a kernel entry without .name";
      return false;
    }
  return true;
}

std::optional<std::string> find_llvm_tool(const std::string& name) {
  std::vector<std::string> candidates = {"/usr/lib/llvm-19/bin/" + name, "/usr/bin/" + name + "-19", "/usr/bin/" + name};
  for (const std::string& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return std::nullopt;
}

bool read_hsaco_metadata(const std::string& readelf, std::span<const std::byte> image, HsacoMeta& meta,
                         std::string& error) {
  char path[] = "/tmp/quiver-hsaco-test-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) {
    error = "cannot create a temporary file";
    return false;
  }
  ::close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
  }
  std::string command = readelf + " --notes " + path + " 2>&1";
  std::string output;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
    int status = ::pclose(pipe);
    std::filesystem::remove(path);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      error = readelf + " failed:\n" + output;
      return false;
    }
  } else {
    std::filesystem::remove(path);
    error = "cannot run " + readelf;
    return false;
  }
  return parse_readelf_notes(output, meta, error);
}

std::vector<std::string> compare_kernel_metadata(const format::Kernel& kernel, const HsacoKernelMeta& meta,
                                                 std::span<const uint32_t> expected_offsets,
                                                 uint64_t expected_kernarg_size, uint64_t wave_size) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& what) { problems.push_back(kernel.symbol + ": " + what); };
  if (meta.name != kernel.symbol) problem(".name is '" + meta.name + "'");
  if (meta.symbol != kernel.symbol + ".kd") problem(".symbol is '" + meta.symbol + "'");
  size_t explicit_args = 0;
  for (const HsacoArg& a : meta.args) {
    if (a.value_kind.rfind("hidden_", 0) == 0) problem("has hidden argument " + a.value_kind);
    else ++explicit_args;
  }
  if (explicit_args != kernel.params.size()) {
    problem(std::to_string(explicit_args) + " explicit arguments, the manifest has " + std::to_string(kernel.params.size()));
  } else {
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      const format::Param& p = kernel.params[i];
      const HsacoArg& a = meta.args[i];
      uint64_t size = p.is_buffer ? 8 : (p.type == format::ScalarType::Bool ? 4 : format::size_of(p.type));
      std::string kind = p.is_buffer ? "global_buffer" : "by_value";
      if (a.value_kind != kind) problem("argument " + p.name + " is " + a.value_kind + ", expected " + kind);
      if (p.is_buffer && a.address_space != "global") problem("buffer " + p.name + " is in address space '" + a.address_space + "'");
      if (a.size != size) problem("argument " + p.name + " has " + std::to_string(a.size) + " bytes, expected " + std::to_string(size));
      if (i < expected_offsets.size() && a.offset != expected_offsets[i])
        problem("argument " + p.name + " at offset " + std::to_string(a.offset) + ", expected " +
                std::to_string(expected_offsets[i]));
    }
  }
  if (meta.kernarg_segment_size != expected_kernarg_size)
    problem(".kernarg_segment_size " + std::to_string(meta.kernarg_segment_size) + ", expected " +
            std::to_string(expected_kernarg_size));
  std::vector<uint64_t> block(kernel.block.begin(), kernel.block.end());
  if (meta.reqd_workgroup_size != block)
    problem(".reqd_workgroup_size [" + join(meta.reqd_workgroup_size) + "], the manifest block [" + join(block) + "]");
  uint64_t threads = block[0] * block[1] * block[2];
  if (meta.max_flat_workgroup_size != threads)
    problem(".max_flat_workgroup_size " + std::to_string(meta.max_flat_workgroup_size) + ", the block has " +
            std::to_string(threads) + " threads");
  // The manifest's total is rounded up to 64 bytes (ir/layout.cpp); the code object's is not, and
  // may be smaller where the backend drops workgroup memory no thread reads (a block of one wave:
  // qv::block_sum's slots past the first), never larger.
  if (meta.group_segment_fixed_size > kernel.shared_bytes)
    problem(".group_segment_fixed_size " + std::to_string(meta.group_segment_fixed_size) +
            ", more than manifest shared_bytes " + std::to_string(kernel.shared_bytes));
  if (meta.wavefront_size != wave_size)
    problem(".wavefront_size " + std::to_string(meta.wavefront_size) + ", expected " + std::to_string(wave_size));
  return problems;
}

uint64_t expected_wave_size(const std::string& arch) {
  // gfx<major><minor><stepping>: the major is everything between "gfx" and the last two digits.
  if (arch.size() < 6) return 0;
  return std::stoi(arch.substr(3, arch.size() - 5)) >= 10 ? 32 : 64;
}

}  // namespace quiver::test
