// Build-time generator for the generated-code tests: writes headers and embed sources from the
// hand-made manifests (test_manifests.h) through compiler/pack/header.h, so the test executable
// compiles exactly what quiverc would emit.
//   quiver_header_gen <out_dir> <cpu_image.so>
// Writes sig.h + sig_embed.cpp (signature manifest; the embedded bytes are fresh random data,
// also written to sig.bin for comparison), cpu.h + cpu_embed.cpp + cpu.qfb (a real fat binary
// holding the host-compiled CPU image), empty.h + empty_embed.cpp (no kernels, zero bytes).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/fatbin.h"
#include "pack/header.h"
#include "test_manifests.h"

namespace {

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) throw std::runtime_error("cannot write " + path);
}
void write_text(const std::string& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) out[i] = static_cast<std::byte>(c[i]);
  return out;
}

std::string host_arch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
#error "the test CPU image supports x86-64 and aarch64 hosts"
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: quiver_header_gen <out_dir> <cpu_image.so>\n";
    return 2;
  }
  const std::string out = argv[1];
  try {
    using quiver::compiler::generate_embed_source;
    using quiver::compiler::generate_header;

    // More than 2 MiB and not a multiple of any line length: large enough that a slow embedding
    // shows up in build times, random so every byte value and escape boundary occurs.
    std::random_device rd;
    const uint32_t seed = rd();
    std::mt19937_64 rng(seed);
    std::vector<std::byte> random_bytes((2u << 20) + rng() % 4093);
    for (std::byte& b : random_bytes) b = static_cast<std::byte>(rng() & 0xff);
    std::cout << "quiver_header_gen: seed " << seed << ", " << random_bytes.size()
              << " random bytes for gen::sig::fatbin()\n";
    write_text(out + "/sig.h", generate_header(quiver::test::signature_manifest(), "gen::sig"));
    write_text(out + "/sig_embed.cpp", generate_embed_source(random_bytes, "gen::sig"));
    write_file(out + "/sig.bin", random_bytes.data(), random_bytes.size());

    quiver::format::ImageInput image{quiver::format::Target::CPU, host_arch(), read_file(argv[2]), {}};
    quiver::format::Manifest cpu = quiver::test::cpu_manifest();
    for (const auto& k : cpu.kernels) image.kernels.push_back(k.symbol);
    std::vector<std::byte> qfb = quiver::format::write_fatbin(cpu, {&image, 1}, 3);
    write_text(out + "/cpu.h", generate_header(cpu, "gen::cpu"));
    write_text(out + "/cpu_embed.cpp", generate_embed_source(qfb, "gen::cpu"));
    write_file(out + "/cpu.qfb", qfb.data(), qfb.size());

    write_text(out + "/empty.h", generate_header(quiver::format::Manifest{}, "gen_empty"));
    write_text(out + "/empty_embed.cpp", generate_embed_source({}, "gen_empty"));
  } catch (const std::exception& e) {
    std::cerr << "quiver_header_gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
