#include "qfb_builder.h"

#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace qfb_test {
namespace {

// FNV-1a 64 as docs/format.md defines it, written here again so the tests do not trust the
// library's implementation to build their expectations.
uint64_t fnv(std::span<const std::byte> data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : data) {
    h ^= static_cast<uint8_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t align16(uint64_t x) { return (x + 15) / 16 * 16; }

}  // namespace

Bytes random_bytes(std::mt19937_64& rng, size_t n, int alphabet) {
  Bytes b(n);
  std::uniform_int_distribution<int> d(0, alphabet - 1);
  for (auto& x : b) x = static_cast<std::byte>(d(rng));
  return b;
}

Bytes compress(std::span<const std::byte> raw, bool content_size, int level) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  Bytes out(ZSTD_compressBound(raw.size()));
  size_t n;
  if (content_size) {
    n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
  } else {
    // One-shot compression always records the size; streaming without a pledged size does not.
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    ZSTD_inBuffer i{raw.data(), raw.size(), 0};
    n = ZSTD_compressStream2(c, &o, &i, ZSTD_e_end);
    if (!ZSTD_isError(n)) n = o.pos;
  }
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) throw std::runtime_error("zstd compression failed in the test");
  out.resize(n);
  return out;
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Parts sample_parts(std::mt19937_64& rng) {
  Parts p;
  json saxpy = {{"name", "saxpy"},
                {"symbol", "qv_k0_saxpy"},
                {"params",
                 {{{"name", "x"}, {"type", "float"}, {"vec_width", 1}, {"buffer", true}, {"access", "read"}},
                  {{"name", "y"}, {"type", "float"}, {"vec_width", 1}, {"buffer", true}, {"access", "read_write"}},
                  {{"name", "a"}, {"type", "float"}, {"vec_width", 1}, {"buffer", false}, {"access", "read"}},
                  {{"name", "n"}, {"type", "uint32_t"}, {"vec_width", 1}, {"buffer", false}, {"access", "read"}}}},
                {"block", {256, 1, 1}},
                {"shared_bytes", 0},
                {"targets", {"ptx", "spirv", "cpu"}},
                {"uses_barrier", false}};
  json reduce = {{"name", "reduce<half, 128>"},
                 {"symbol", "qv_k1_reduce_half_128"},
                 {"params",
                  {{{"name", "in"}, {"type", "half"}, {"vec_width", 4}, {"buffer", true}, {"access", "read"}},
                   {{"name", "out"}, {"type", "float"}, {"vec_width", 1}, {"buffer", true}, {"access", "read_write"}}}},
                 {"block", {128, 2, 1}},
                 {"shared_bytes", 1024},
                 {"targets", {"ptx", "cpu"}},
                 {"uses_barrier", true}};
  p.manifest = {{"compiler_version", "quiverc 0.1.0 (test)"},
                {"source_hash", "0123456789abcdef"},
                {"kernels", {saxpy, reduce}},
                {"images", json::array()}};
  struct Spec {
    const char* target;
    const char* arch;
    std::vector<std::string> kernels;
    size_t size;
  };
  const Spec specs[] = {{"ptx", "sm_80", {"qv_k0_saxpy", "qv_k1_reduce_half_128"}, 300},
                        {"spirv", "vulkan1.2", {"qv_k0_saxpy"}, 200},
                        {"cpu", "x86_64", {"qv_k0_saxpy", "qv_k1_reduce_half_128"}, 500}};
  for (const Spec& s : specs) {
    p.raw.push_back(random_bytes(rng, s.size, 16));
    p.frames.push_back(compress(p.raw.back()));
    p.manifest["images"].push_back({{"target", s.target}, {"arch", s.arch}, {"kernels", s.kernels}});
  }
  return p;
}

Bytes assemble(const Parts& parts, const std::function<void(json&)>& edit_manifest, Layout layout) {
  json m = parts.manifest;
  // Offsets are unknown until the manifest length is; reserve room for 20-digit numbers.
  auto lay_out = [&](uint64_t manifest_space) {
    uint64_t at = align16(layout.header_size + manifest_space);
    for (size_t i = 0; i < parts.frames.size(); ++i) {
      json& im = m["images"][i];
      im["offset"] = at;
      im["size"] = parts.frames[i].size();
      im["raw_size"] = parts.raw[i].size();
      im["checksum"] = hex16(fnv(parts.frames[i]));
      at = align16(at + parts.frames[i].size());
    }
  };
  lay_out(0);
  uint64_t space = layout.manifest_reserve ? layout.manifest_reserve : m.dump().size() + 64 * parts.frames.size() + 512;
  lay_out(space);
  if (edit_manifest) edit_manifest(m);
  std::string text = m.dump();
  // An edit that grows the manifest past its reserved space (absurd counts) moves the frames
  // after it; such files fail on the manifest before offsets matter.
  const uint64_t first_frame = align16(layout.header_size + std::max<uint64_t>(space, text.size()));
  uint64_t end = layout.header_size + text.size(), at = first_frame;
  for (const Bytes& f : parts.frames) {
    at = align16(at) + f.size();
    end = std::max(end, at);
  }

  Bytes file(end, std::byte{0});
  std::memcpy(file.data(), "QVFB\r\n\x1a\n", 8);
  store_u16(file, hdr::kMajor, layout.major);
  store_u16(file, hdr::kMinor, layout.minor);
  store_u32(file, hdr::kHeaderSize, layout.header_size);
  store_u64(file, hdr::kFileSize, file.size());
  store_u64(file, hdr::kManifestOffset, layout.header_size);
  store_u64(file, hdr::kManifestSize, text.size());
  std::memcpy(file.data() + layout.header_size, text.data(), text.size());
  at = first_frame;
  for (const Bytes& f : parts.frames) {
    at = align16(at);
    std::memcpy(file.data() + at, f.data(), f.size());
    at += f.size();
  }
  reseal_manifest(file);
  return file;
}

uint64_t load_u64(std::span<const std::byte> b, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

template <typename T>
static void store(Bytes& b, size_t at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void store_u16(Bytes& b, size_t at, uint16_t v) { store(b, at, v); }
void store_u32(Bytes& b, size_t at, uint32_t v) { store(b, at, v); }
void store_u64(Bytes& b, size_t at, uint64_t v) { store(b, at, v); }

void reseal_header(Bytes& file) {
  uint32_t header_size = static_cast<uint32_t>(load_u64(file, hdr::kHeaderSize) & 0xffffffffu);
  store_u64(file, hdr::kHeaderChecksum, 0);
  store_u64(file, hdr::kHeaderChecksum, fnv(std::span<const std::byte>(file).subspan(0, header_size)));
}

void reseal_manifest(Bytes& file) {
  uint64_t offset = load_u64(file, hdr::kManifestOffset), size = load_u64(file, hdr::kManifestSize);
  store_u64(file, hdr::kManifestChecksum, fnv(std::span<const std::byte>(file).subspan(offset, size)));
  reseal_header(file);
}

void patch_frame_content_size(Bytes& frame, uint64_t value) {
  const uint8_t fhd = static_cast<uint8_t>(frame.at(4));
  const unsigned fcs_flag = fhd >> 6, single_segment = (fhd >> 5) & 1, dict_flag = fhd & 3;
  static constexpr size_t kDictBytes[] = {0, 1, 2, 4};
  size_t pos = 5 + (single_segment ? 0 : 1) + kDictBytes[dict_flag];
  static constexpr size_t kFcsBytes[] = {0, 2, 4, 8};
  size_t n = fcs_flag == 0 ? (single_segment ? 1 : 0) : kFcsBytes[fcs_flag];
  if (n == 0) throw std::runtime_error("frame has no content size field");
  if (n == 2) value -= 256;  // the 2-byte form stores size - 256
  if (n < 8 && value >> (8 * n)) throw std::runtime_error("content size does not fit the frame's field");
  for (size_t i = 0; i < n; ++i) frame.at(pos + i) = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

}  // namespace qfb_test
