// Writes small synthetic fat binaries as fuzz seeds (docs/reliability.md). quiverc's real files
// cover only the targets this build compiles for, and the fat binary of every test kernel is
// ~100 KiB: the fuzzer spends its time re-parsing bulk. These files are 0.4 to ~3.5 KiB and
// between them use every manifest field, every target kind, every scalar type, every vector
// width, both access kinds, scalars and buffers, barriers on and off, a newer minor version
// whose unknown target a reader must skip, and a dozen kernels in three images.
//
// It also writes repeat_*.txt: inputs that qfb_fuzzer repeats out to large manifests (its
// read_repeated: "R", a count byte, head \x01 body \x01 tail): a million-key document object,
// 3 601 kernels, nested unknown values, a megabyte string, a key repeated a million times.
//
// usage: qfb_fuzz_seed_maker OUT_DIR   (writes synthetic_*.qfb and repeat_*.txt there)
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/fatbin.h"
#include "format/manifest.h"

namespace qf = quiver::format;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

qf::Param param(const char* name, qf::ScalarType type, uint32_t vec, bool buffer, qf::Access access) {
  qf::Param p;
  p.name = name;
  p.type = type;
  p.vec_width = vec;
  p.is_buffer = buffer;
  p.access = access;
  return p;
}

constexpr qf::Target kAllTargets[] = {qf::Target::PTX, qf::Target::CUBIN,    qf::Target::SPIRV, qf::Target::CPU,
                                      qf::Target::HSACO, qf::Target::MSL, qf::Target::METALLIB, qf::Target::WGSL};
constexpr const char* kArchOf[] = {"sm_90", "sm_80", "vulkan1.2", "x86_64", "gfx942", "msl3.0", "apple-m1", "wgsl"};
static_assert(std::size(kAllTargets) == qf::kTargetCount && std::size(kArchOf) == qf::kTargetCount,
              "synthetic_all_targets has an image of every kind of format/targets.h: give a new one its arch");

// Kernel "wide<float, 4>": one parameter of every scalar type, vector widths 1/2/4/8, read and
// read_write buffers and scalars, a 3-D block, shared memory, a barrier, on `targets`.
qf::Kernel wide_kernel(std::vector<qf::Target> targets) {
  using S = qf::ScalarType;
  using A = qf::Access;
  qf::Kernel k;
  k.name = "wide<float, 4>";
  k.symbol = "qv_k0_wide";
  k.params = {param("out", S::F32, 4, true, A::ReadWrite), param("b", S::Bool, 1, true, A::Read),
              param("i8", S::I8, 2, true, A::Read),       param("u8", S::U8, 8, true, A::ReadWrite),
              param("i16", S::I16, 1, false, A::Read),    param("u16", S::U16, 1, false, A::Read),
              param("i32", S::I32, 1, false, A::Read),    param("u32", S::U32, 4, true, A::Read),
              param("i64", S::I64, 1, false, A::Read),    param("u64", S::U64, 2, true, A::ReadWrite),
              param("h", S::F16, 8, true, A::Read),       param("bf", S::BF16, 2, true, A::Read),
              param("", S::F64, 1, false, A::Read)};
  k.block = {8, 4, 2};
  k.shared_bytes = 4096;
  k.targets = std::move(targets);
  k.uses_barrier = true;
  return k;
}

qf::Kernel small_kernel(const char* name, const char* symbol, std::vector<qf::Target> targets) {
  qf::Kernel k;
  k.name = name;
  k.symbol = symbol;
  k.params = {param("x", qf::ScalarType::F32, 1, true, qf::Access::ReadWrite),
              param("n", qf::ScalarType::U32, 1, false, qf::Access::Read)};
  k.block = {256, 1, 1};
  k.targets = std::move(targets);
  return k;
}

qf::ImageInput image(qf::Target t, const char* arch, std::vector<std::string> kernels) {
  // Image contents are opaque to the reader: short text that zstd stores in a tiny frame.
  return {t, arch, bytes_of(std::string("image:") + std::string(qf::to_string(t)) + ":" + arch), std::move(kernels)};
}

void store_u64(std::vector<std::byte>& f, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) f[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
uint64_t load_u64(const std::vector<std::byte>& f, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(f[at + i])) << (8 * i);
  return v;
}

// Re-signs a file edited in place (docs/format.md: manifest checksum at 40, header checksum
// at 56 over the 64-byte header with that field zero).
void reseal(std::vector<std::byte>& f) {
  const uint64_t mo = load_u64(f, 24), ms = load_u64(f, 32);
  store_u64(f, 40, qf::fnv1a64(std::span<const std::byte>(f).subspan(mo, ms)));
  store_u64(f, 56, 0);
  store_u64(f, 56, qf::fnv1a64(std::span<const std::byte>(f).subspan(0, qf::kHeaderSize)));
}

void write_raw(const std::string& path, const std::vector<std::byte>& f) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  if (!out) {
    std::fprintf(stderr, "qfb_fuzz_seed_maker: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void write(const std::string& path, const std::vector<std::byte>& f) {
  (void)qf::FatBinary::parse(f, path);  // every seed is a valid file
  write_raw(path, f);
}

// A read_repeated input: body repeated 1 + 16 count² times (up to 1 MiB) between head and tail.
void write_repeated(const std::string& path, uint8_t count, const std::string& head, const std::string& body,
                    const std::string& tail) {
  write_raw(path, bytes_of("R" + std::string(1, static_cast<char>(count)) + head + '\x01' + body + '\x01' + tail));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: qfb_fuzz_seed_maker OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  qf::Manifest m;
  m.compiler_version = "quiverc 0.1.0 (LLVM 19.1.7)";
  m.source_hash = "0123456789abcdef";

  // Every target kind, one image each; a second kernel in two of them.
  {
    qf::Manifest all = m;
    all.kernels = {wide_kernel(std::vector<qf::Target>(std::begin(kAllTargets), std::end(kAllTargets))),
                   small_kernel("copy", "qv_k1_copy", {qf::Target::PTX, qf::Target::SPIRV})};
    std::vector<qf::ImageInput> images;
    for (size_t i = 0; i < std::size(kAllTargets); ++i) {
      std::vector<std::string> syms = {"qv_k0_wide"};
      if (kAllTargets[i] == qf::Target::PTX || kAllTargets[i] == qf::Target::SPIRV) syms.push_back("qv_k1_copy");
      images.push_back(image(kAllTargets[i], kArchOf[i], syms));
    }
    std::vector<std::byte> f = qf::write_fatbin(all, images);
    write(dir + "/synthetic_all_targets.qfb", f);

    // The same file as a newer minor version whose WGSL target this reader does not know: the
    // image and the kernel's target are skipped, not refused. "wgsl" -> "wgpu" keeps lengths.
    f[10] = static_cast<std::byte>(qf::kFormatMinor + 1);
    const uint64_t mo = load_u64(f, 24), ms = load_u64(f, 32);
    std::string text(reinterpret_cast<const char*>(f.data() + mo), ms);
    for (size_t at = text.find("\"wgsl\""); at != std::string::npos; at = text.find("\"wgsl\"", at))
      text.replace(at, 6, "\"wgpu\"");
    std::memcpy(f.data() + mo, text.data(), text.size());
    reseal(f);
    write(dir + "/synthetic_newer_minor.qfb", f);
  }
  // The smallest useful file: one CPU image, one kernel without parameters or barrier.
  {
    qf::Manifest one = m;
    one.compiler_version = "";
    qf::Kernel k = small_kernel("noop", "qv_k0_noop", {qf::Target::CPU});
    k.params.clear();
    k.block = {1, 1, 1};
    one.kernels = {k};
    std::vector<qf::ImageInput> images = {image(qf::Target::CPU, "x86_64", {"qv_k0_noop"})};
    write(dir + "/synthetic_minimal.qfb", qf::write_fatbin(one, images));
  }
  // Two images of one target (different archs), two kernels each.
  {
    qf::Manifest two = m;
    two.kernels = {small_kernel("a", "qv_k0_a", {qf::Target::CUBIN}), small_kernel("b", "qv_k1_b", {qf::Target::CUBIN})};
    std::vector<qf::ImageInput> images = {image(qf::Target::CUBIN, "sm_80", {"qv_k0_a", "qv_k1_b"}),
                                          image(qf::Target::CUBIN, "sm_90", {"qv_k0_a", "qv_k1_b"})};
    write(dir + "/synthetic_two_archs.qfb", qf::write_fatbin(two, images));
  }
  // A dozen kernels in three images (as quiverc writes for a whole test suite), short names so
  // the file stays small: the reader's loops and sets over kernels and symbols at real sizes.
  {
    qf::Manifest many = m;
    std::vector<std::string> syms;
    for (int i = 0; i < 12; ++i) {
      const std::string n = "k" + std::to_string(i);
      qf::Kernel k = small_kernel(n.c_str(), ("qv_" + n).c_str(), {qf::Target::PTX, qf::Target::SPIRV});
      k.params.resize(i % 3);
      many.kernels.push_back(k);
      syms.push_back(k.symbol);
    }
    std::vector<qf::ImageInput> images = {image(qf::Target::PTX, "sm_80", syms), image(qf::Target::PTX, "sm_90", syms),
                                          image(qf::Target::SPIRV, "vulkan1.2", syms)};
    write(dir + "/synthetic_many_kernels.qfb", qf::write_fatbin(many, images));
  }
  // Large manifests (qfb_fuzzer's read_repeated); each expands to a valid manifest except the
  // last, whose repeated key must be refused.
  const std::string empty_head = "{\"compiler_version\":\"\",\"source_hash\":\"\",\"kernels\":[],\"images\":[]";
  write_repeated(dir + "/repeat_unknown_keys.txt", 255, empty_head, ",\"x#\":0", "}");
  write_repeated(dir + "/repeat_nested_values.txt", 255, empty_head, ",\"x#\":{\"a\":[0,{\"b\":\"#\"}],\"c\":null}", "}");
  write_repeated(dir + "/repeat_long_string.txt", 255, "{\"x\":\"", "abcdefgh",
                 "\"," + empty_head.substr(1) + "}");
  write_repeated(dir + "/repeat_same_key.txt", 255, empty_head, ",\"x\":0", "}");
  // 3 601 kernels (the limit is 4 096) without targets, so no image needs to list them.
  const std::string kernel = "{\"name\":\"k#\",\"symbol\":\"k#\",\"params\":[],\"block\":[1,1,1],"
                             "\"shared_bytes\":0,\"targets\":[],\"uses_barrier\":false}";
  std::string first_kernel = kernel;
  for (int i = 0; i < 2; ++i) first_kernel.replace(first_kernel.find("k#"), 2, "first");
  write_repeated(dir + "/repeat_kernels.txt", 15,
                 "{\"compiler_version\":\"\",\"source_hash\":\"\",\"kernels\":[" + first_kernel, "," + kernel,
                 "],\"images\":[]}");
  return 0;
}
