#include "disasm.h"

#include "msl_image.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#ifdef QUIVER_DUMP_HAVE_SPIRV_TOOLS
#include <spirv-tools/libspirv.hpp>
#endif

namespace quiver::dump {
namespace {

using format::Target;

// First executable named `name` on PATH.
std::optional<std::string> find_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// The image in a private temporary file, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(std::span<const std::byte> data) {
    std::string pattern = (std::filesystem::temp_directory_path() / "quiver-dump-XXXXXX").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = ::mkstemp(name.data());
    if (fd < 0) {
      error_ = std::string("cannot create a temporary file: ") + std::strerror(errno);
      return;
    }
    path_ = name.data();
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = std::string("cannot write the temporary file: ") + std::strerror(errno);
        break;
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
};

// Runs a program (no shell involved) and collects what it writes to stdout and stderr.
Disassembly run_tool(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe(fds) != 0) return {false, std::string("cannot create a pipe: ") + std::strerror(errno)};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {false, std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {false, argv[0] + " failed (status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                       "):\n" + out};
  return {true, out};
}

Disassembly with_tool(std::span<const std::byte> data, std::initializer_list<std::string_view> names,
                      std::vector<std::string> args, const std::string& what) {
  std::optional<std::string> program;
  for (std::string_view n : names)
    if ((program = find_program(n))) break;
  if (!program) {
    std::string list;
    for (std::string_view n : names) list += (list.empty() ? "" : " or ") + std::string(n);
    return {false, what + " disassembly is not available: " + list + " was not found on PATH"};
  }
  TempFile file(data);
  if (!file.error().empty()) return {false, file.error()};
  args.insert(args.begin(), *program);
  args.push_back(file.path());
  return run_tool(args);
}

Disassembly as_text(std::span<const std::byte> data, const std::string& what) {
  std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);  // drivers want a NUL-terminated string
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\r' && c != '\t')
      return {false, "the " + what + " image is not text (it contains byte 0x" +
                         std::string(1, "0123456789abcdef"[u >> 4]) + std::string(1, "0123456789abcdef"[u & 15]) + ")"};
  }
  std::string out(text);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return {true, out};
}

Disassembly spirv(const format::Image&, std::span<const std::byte> data, const std::string&) {
#ifdef QUIVER_DUMP_HAVE_SPIRV_TOOLS
  if (data.size() % 4 != 0)
    return {false, "the SPIR-V image is " + std::to_string(data.size()) + " bytes, not a whole number of words"};
  std::vector<uint32_t> words(data.size() / 4);
  std::memcpy(words.data(), data.data(), data.size());
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    messages += "word " + std::to_string(pos.index) + ": " + msg + "\n";
  });
  std::string text;
  uint32_t options = SPV_BINARY_TO_TEXT_OPTION_INDENT | SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES;
  if (!tools.Disassemble(words, &text, options)) return {false, "SPIR-V disassembly failed: " + messages};
  return {true, text};
#else
  (void)data;
  return {false, "SPIR-V disassembly is not available: quiver-dump was built without SPIRV-Tools"};
#endif
}

// One kernel's translation unit of an MSL image (runtime/backends/metal/msl_image.h), or the
// whole text when no kernel is asked for.
Disassembly msl(const format::Image&, std::span<const std::byte> data, const std::string& kernel_symbol) {
  Disassembly text = as_text(data, "MSL");
  if (!text.ok || kernel_symbol.empty()) return text;
  msl_image::Image image;
  std::string error;
  if (!msl_image::parse(text.text, image, error)) return {false, "the MSL image is malformed: " + error};
  for (const msl_image::KernelSource& k : image.kernels)
    if (k.symbol == kernel_symbol) {
      std::string indices;
      for (uint32_t b : k.buffer_index) indices += (indices.empty() ? "" : ",") + std::to_string(b);
      return {true, "// kernel " + k.symbol + ": function " + k.function + ", parameter buffers " + indices + "\n" +
                        k.source};
    }
  return {false, "the MSL image has no translation unit for '" + kernel_symbol + "'"};
}

// The units of one kernel in a WGSL image (docs/abi.md "WGSL": each after its
// "//@qv-kernel <symbol> ..." line), or the whole text when no kernel is asked for.
Disassembly wgsl(const format::Image&, std::span<const std::byte> data, const std::string& kernel_symbol) {
  Disassembly text = as_text(data, "WGSL");
  if (!text.ok || kernel_symbol.empty()) return text;
  const std::string marker = "//@qv-kernel ";
  std::string out;
  bool in_unit = false;
  size_t begin = 0;
  while (begin < text.text.size()) {
    size_t end = text.text.find('\n', begin);
    if (end == std::string::npos) end = text.text.size();
    std::string_view line(text.text.data() + begin, end - begin);
    if (line.starts_with(marker)) {
      std::string_view rest = line.substr(marker.size());
      in_unit = rest.substr(0, rest.find(' ')) == kernel_symbol;
    }
    if (in_unit) out.append(line).append("\n");
    begin = end + 1;
  }
  if (out.empty()) return {false, "the WGSL image has no unit for '" + kernel_symbol + "'"};
  return {true, out};
}

Disassembly cpu(const format::Image&, std::span<const std::byte> data, const std::string&) {
  return with_tool(data, {"llvm-objdump-19", "llvm-objdump"}, {"-d"}, "CPU");
}

Disassembly hsaco(const format::Image& image, std::span<const std::byte> data, const std::string& kernel_symbol) {
  std::vector<std::string> args = {"-d", "--mcpu=" + image.arch};
  if (!kernel_symbol.empty()) args.push_back("--disassemble-symbols=" + kernel_symbol);
  return with_tool(data, {"llvm-objdump-19", "llvm-objdump"}, args, "HSACO");
}

Disassembly cubin(const format::Image&, std::span<const std::byte> data, const std::string&) {
  return with_tool(data, {"nvdisasm"}, {}, "cubin");
}

Disassembly metallib(const format::Image&, std::span<const std::byte>, const std::string&) {
  return {false, "metallib disassembly is not available (it needs Apple's tools)"};
}

// The image kinds that need more than their ImageKind's default (format/targets.h): a text
// image is shown as it is, a binary one says there is no disassembler for it.
struct Disassembler {
  Target target;
  Disassembly (*run)(const format::Image&, std::span<const std::byte>, const std::string&);
};
constexpr Disassembler kDisassemblers[] = {
    {Target::MSL, msl},     {Target::WGSL, wgsl},   {Target::SPIRV, spirv},        {Target::CPU, cpu},
    {Target::HSACO, hsaco}, {Target::CUBIN, cubin}, {Target::METALLIB, metallib},
};

}  // namespace

Disassembly disassemble(const format::Image& image, std::span<const std::byte> data,
                        const std::string& kernel_symbol) {
  for (const Disassembler& d : kDisassemblers)
    if (d.target == image.target) return d.run(image, data, kernel_symbol);
  const format::TargetInfo& target = format::info(image.target);
  const std::string label(target.label);
  if (target.kind == format::ImageKind::Text) return as_text(data, label);
  return {false, label + " disassembly is not available: quiver-dump has no disassembler for " +
                     std::string(target.name) + " images"};
}

}  // namespace quiver::dump
