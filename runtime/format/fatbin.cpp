// Reading and writing the .qfb container (docs/format.md). The reader treats the file as
// hostile: every offset, size and count is checked against the bytes actually present before
// anything is read through it.
#include "format/fatbin.h"

#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "quiver/runtime.h"

namespace quiver::format {
namespace {

// Byte positions of the header fields (docs/format.md, "Header").
namespace off {
constexpr size_t kMagic = 0, kMajor = 8, kMinor = 10, kHeaderSize = 12, kFileSize = 16,
                 kManifestOffset = 24, kManifestSize = 32, kManifestChecksum = 40, kFlags = 48,
                 kReserved = 52, kHeaderChecksum = 56;
}  // namespace off

// Files larger than this are refused by read_file before they are read into memory.
constexpr uint64_t kMaxFileBytes = 4ull << 30;

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a64_update(uint64_t h, std::span<const std::byte> data) {
  for (std::byte b : data) {
    h ^= static_cast<uint8_t>(b);
    h *= kFnvPrime;
  }
  return h;
}

template <typename T>
T load_le(std::span<const std::byte> bytes, size_t at) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

template <typename T>
void store_le(std::vector<std::byte>& bytes, size_t at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) bytes[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// The header checksum covers the whole header (extensions of newer minors included) with the
// checksum field itself taken as zero.
uint64_t header_checksum(std::span<const std::byte> bytes, size_t header_size) {
  static constexpr std::byte kZero[8] = {};
  uint64_t h = fnv1a64_update(kFnvOffsetBasis, bytes.subspan(0, off::kHeaderChecksum));
  h = fnv1a64_update(h, kZero);
  return fnv1a64_update(h, bytes.subspan(off::kHeaderChecksum + 8, header_size - off::kHeaderChecksum - 8));
}

std::string hex(uint64_t v) { return "0x" + checksum_hex(v); }

[[noreturn]] void fail(const std::string& label, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::InvalidFatBinary, label + ": invalid fat binary: " + field + ": " + what);
}

std::string image_field(size_t i, const char* name) {
  return "images[" + std::to_string(i) + "]" + (name[0] ? "." : "") + name;
}

Header read_header(std::span<const std::byte> bytes, const std::string& label) {
  const size_t n = bytes.size();
  if (n >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    fail(label, "header.magic", "not a quiver fat binary (the file does not start with \"QVFB\\r\\n\\x1a\\n\")");
  if (n < off::kFileSize)
    fail(label, "header", "truncated: the file has " + std::to_string(n) + " bytes, the header needs " +
                              std::to_string(kHeaderSize));
  Header h;
  h.major = load_le<uint16_t>(bytes, off::kMajor);
  h.minor = load_le<uint16_t>(bytes, off::kMinor);
  const std::string version = std::to_string(h.major) + "." + std::to_string(h.minor);
  const std::string supported = "format version " + std::to_string(kFormatMajor) + " (" +
                                std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) + " and later " +
                                std::to_string(kFormatMajor) + ".x minors)";
  if (h.major > kFormatMajor)
    fail(label, "header.major", "the file has format version " + version + "; this reader supports " + supported +
                                    "; use a newer quiver runtime");
  if (h.major < kFormatMajor)
    fail(label, "header.major", "the file has format version " + version + ", which is not valid; this reader supports " +
                                    supported);
  h.header_size = load_le<uint32_t>(bytes, off::kHeaderSize);
  if (h.header_size < kHeaderSize || h.header_size > kMaxHeaderSize)
    fail(label, "header.header_size", std::to_string(h.header_size) + " is outside " +
                                          std::to_string(kHeaderSize) + ".." + std::to_string(kMaxHeaderSize));
  if (n < h.header_size)
    fail(label, "header", "truncated: the file has " + std::to_string(n) + " bytes, the header needs " +
                              std::to_string(h.header_size));
  h.header_checksum = load_le<uint64_t>(bytes, off::kHeaderChecksum);
  uint64_t actual = header_checksum(bytes, h.header_size);
  if (actual != h.header_checksum)
    fail(label, "header.header_checksum", "mismatch: stored " + hex(h.header_checksum) + ", computed " +
                                              hex(actual) + " (the header is corrupt)");
  h.flags = load_le<uint32_t>(bytes, off::kFlags);
  if (h.flags != 0)
    fail(label, "header.flags", "requires features this reader does not have (bits " + hex(h.flags) + ")");
  h.file_size = load_le<uint64_t>(bytes, off::kFileSize);
  if (h.file_size != n)
    fail(label, "header.file_size", "the header says " + std::to_string(h.file_size) + " bytes but the file has " +
                                        std::to_string(n) + (h.file_size > n ? " (truncated)" : ""));
  h.manifest_offset = load_le<uint64_t>(bytes, off::kManifestOffset);
  h.manifest_size = load_le<uint64_t>(bytes, off::kManifestSize);
  h.manifest_checksum = load_le<uint64_t>(bytes, off::kManifestChecksum);
  if (h.manifest_offset < h.header_size)
    fail(label, "header.manifest_offset", std::to_string(h.manifest_offset) + " overlaps the " +
                                              std::to_string(h.header_size) + "-byte header");
  if (h.manifest_offset > n)
    fail(label, "header.manifest_offset", std::to_string(h.manifest_offset) + " is past the end of the " +
                                              std::to_string(n) + "-byte file");
  if (h.manifest_size == 0 || h.manifest_size > limits::kMaxManifestBytes)
    fail(label, "header.manifest_size", std::to_string(h.manifest_size) + " is outside 1.." +
                                            std::to_string(limits::kMaxManifestBytes));
  if (h.manifest_size > n - h.manifest_offset)
    fail(label, "header.manifest_size", "the manifest (" + std::to_string(h.manifest_size) + " bytes at " +
                                            std::to_string(h.manifest_offset) + ") runs past the end of the " +
                                            std::to_string(n) + "-byte file");
  uint64_t manifest_hash = fnv1a64(bytes.subspan(h.manifest_offset, h.manifest_size));
  if (manifest_hash != h.manifest_checksum)
    fail(label, "header.manifest_checksum", "mismatch: stored " + hex(h.manifest_checksum) + ", computed " +
                                                hex(manifest_hash) + " (the manifest is corrupt)");
  return h;
}

// Images must lie inside the file, 16-byte aligned, and overlap neither the header, the
// manifest nor each other.
void check_image_layout(const Header& h, const Manifest& m, const std::string& label) {
  struct Range {
    uint64_t begin, end;
    std::string what;
  };
  std::vector<Range> ranges;
  ranges.push_back({0, h.header_size, "the header"});
  ranges.push_back({h.manifest_offset, h.manifest_offset + h.manifest_size, "the manifest"});
  for (size_t i = 0; i < m.images.size(); ++i) {
    const Image& im = m.images[i];
    if (im.offset % kImageAlignment != 0)
      fail(label, image_field(i, "offset"), std::to_string(im.offset) + " is not a multiple of " +
                                                std::to_string(kImageAlignment));
    if (im.offset >= h.file_size)
      fail(label, image_field(i, "offset"), std::to_string(im.offset) + " is past the end of the " +
                                                std::to_string(h.file_size) + "-byte file");
    if (im.size == 0) fail(label, image_field(i, "size"), "an image cannot be empty");
    if (im.size > h.file_size - im.offset)
      fail(label, image_field(i, "size"), "the image (" + std::to_string(im.size) + " bytes at " +
                                              std::to_string(im.offset) + ") runs past the end of the " +
                                              std::to_string(h.file_size) + "-byte file");
    ranges.push_back({im.offset, im.offset + im.size, image_field(i, "")});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      // Report against the image (the header and manifest were checked already).
      const Range& a = ranges[i - 1].what.starts_with("images[") ? ranges[i - 1] : ranges[i];
      const Range& b = &a == &ranges[i] ? ranges[i - 1] : ranges[i];
      fail(label, a.what + ".offset", "bytes " + std::to_string(a.begin) + ".." + std::to_string(a.end) +
                                          " overlap " + b.what + " (bytes " + std::to_string(b.begin) + ".." +
                                          std::to_string(b.end) + ")");
    }
  }
}

struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct CctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// The first output allocation of a decompression. A frame whose declared size is at most
// kTrustedRatio times its compressed size gets its whole output at once: zstd then decodes it in
// one pass straight into that buffer (measured on the op library: the 877 KB SPIR-V image 1.7 ms
// instead of 4.4 ms through a growing buffer and zstd's window copies; its images compress 3.5x
// to 16x). Any other frame starts at kInitialOutputBytes and memory grows only as real output
// arrives, so a frame that declares a large content size but holds little data (a tiny file
// making the reader allocate up to 1 GiB) costs a small multiple of what it really decodes, and
// never more than kTrustedRatio times the bytes the file really spends on it.
constexpr size_t kInitialOutputBytes = 256u << 10;
constexpr uint64_t kTrustedRatio = 16;

// Decompresses one zstd frame whose declared content size the caller has checked equals
// `raw_size` (<= limits::kMaxImageRawBytes). Output never exceeds `raw_size` bytes: a frame that
// holds more data than it declares fails as soon as it would write byte raw_size + 1, one that
// holds less fails at its end. zstd's own window buffer is bounded by min(window, raw_size) and
// by ZSTD_d_windowLogMax (kMaxWindowLog): a frame asking for a larger window is refused.
std::vector<std::byte> decompress_bounded(std::span<const std::byte> frame, uint64_t raw_size,
                                          const std::string& label, const std::string& field,
                                          const std::string& size_field) {
  constexpr int kMaxWindowLog = 27;  // 128 MiB, what zstd's highest level (22) writes at most
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) throw Error(ErrorCode::OutOfMemory, label + ": cannot create a zstd decompression context");
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kMaxWindowLog);
  const size_t limit = static_cast<size_t>(raw_size);
  const bool plausible = raw_size <= kTrustedRatio * frame.size();   // frame.size() < the 4 GiB file limit
  std::vector<std::byte> out(plausible ? limit : std::min(limit, kInitialOutputBytes));
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  size_t produced = 0;
  for (;;) {
    // The vector may have moved when it grew; zstd keeps no pointer into it between calls.
    ZSTD_outBuffer ob{out.data(), out.size(), produced};
    const size_t in_before = in.pos;
    size_t hint = ZSTD_decompressStream(dctx.get(), &ob, &in);
    if (ZSTD_isError(hint)) fail(label, field, std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint));
    const bool progressed = ob.pos != produced || in.pos != in_before;
    produced = ob.pos;
    if (hint == 0) break;  // the frame ended (zstd verified its content size and checksum)
    if (produced < out.size()) {
      if (in.pos == in.size)
        fail(label, field, "corrupt zstd data: the frame ends before its declared " + std::to_string(raw_size) +
                               " bytes (" + std::to_string(produced) + " decoded)");
      continue;
    }
    if (out.size() < limit) {
      // Doubling, but straight to `limit` once doubling passes half of it: the step into the
      // final size then starts from at most limit / 2, so peak memory stays <= 1.5 x raw_size
      // for an honest frame, and <= 4 x what it decoded for a lying one (or the first
      // allocation, kTrustedRatio x the frame's size, when that is larger). reserve() allocates
      // exactly (resize alone may double the capacity past `limit`).
      const size_t grown = out.size() * 2 > limit / 2 ? limit : out.size() * 2;
      out.reserve(grown);
      out.resize(grown);
      continue;
    }
    // The output holds raw_size bytes; zstd may still read the frame's checksum without
    // producing anything, but output it cannot place means the data is larger than declared.
    if (!progressed)
      fail(label, size_field, "the zstd frame decompresses to more than the declared " + std::to_string(raw_size) +
                                  " bytes");
  }
  if (in.pos != in.size)
    fail(label, field, "corrupt zstd data: " + std::to_string(in.size - in.pos) + " bytes follow the frame's end");
  if (produced != limit)
    fail(label, size_field, "decompressed to " + std::to_string(produced) + " bytes, the manifest says " +
                                std::to_string(raw_size));
  out.resize(produced);
  return out;
}

}  // namespace

uint64_t fnv1a64(std::span<const std::byte> data) { return fnv1a64_update(kFnvOffsetBasis, data); }

FatBinary::FatBinary(const FatBinary& other)
    : owned_(other.owned_),
      data_(other.owned_.empty() ? other.data_ : std::span<const std::byte>(owned_)),
      header_(other.header_),
      manifest_(other.manifest_),
      label_(other.label_) {}

FatBinary& FatBinary::operator=(const FatBinary& other) {
  if (this != &other) *this = FatBinary(other);
  return *this;
}

FatBinary FatBinary::parse(std::span<const std::byte> bytes, std::string label) {
  FatBinary fb;
  fb.owned_.assign(bytes.begin(), bytes.end());
  fb.data_ = fb.owned_;
  return parse_into(std::move(fb), std::move(label));
}

FatBinary FatBinary::view(std::span<const std::byte> bytes, std::string label) {
  FatBinary fb;
  fb.data_ = bytes;
  return parse_into(std::move(fb), std::move(label));
}

FatBinary FatBinary::parse_into(FatBinary fb, std::string label) {
  fb.label_ = std::move(label);
  std::span<const std::byte> data = fb.data_;
  fb.header_ = read_header(data, fb.label_);
  const Header& h = fb.header_;
  auto text = data.subspan(h.manifest_offset, h.manifest_size);
  fb.manifest_ = manifest_from_json(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()),
                                    fb.label_, /*skip_unknown_targets=*/h.minor > kFormatMinor);
  check_image_layout(h, fb.manifest_, fb.label_);
  return fb;
}

FatBinary FatBinary::read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::NotFound, path + ": cannot open fat binary: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  if (end < 0) throw Error(ErrorCode::InvalidFatBinary, path + ": cannot read fat binary (not a regular file?)");
  if (static_cast<uint64_t>(end) > kMaxFileBytes)
    fail(path, "header.file_size", std::to_string(end) + " bytes exceeds the " +
                                       std::to_string(kMaxFileBytes) + "-byte limit");
  in.seekg(0, std::ios::beg);
  std::vector<std::byte> bytes(static_cast<size_t>(end));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), end))
    throw Error(ErrorCode::InvalidFatBinary, path + ": cannot read fat binary: read failed");
  FatBinary fb;
  fb.owned_ = std::move(bytes);
  fb.data_ = fb.owned_;
  return parse_into(std::move(fb), path);
}

void FatBinary::prefetch(size_t index) {
  Prefetched p{index, {}, nullptr};
  try {
    p.data = image_data(index);
  } catch (...) {
    p.error = std::current_exception();
  }
  prefetched_.push_back(std::move(p));
}

std::vector<std::byte> FatBinary::image_data(size_t index) const {
  for (auto it = prefetched_.begin(); it != prefetched_.end(); ++it) {
    if (it->index != index) continue;
    Prefetched p = std::move(*it);
    prefetched_.erase(it);
    if (p.error) std::rethrow_exception(p.error);
    return std::move(p.data);
  }
  return check_image(image_frame(index), manifest_.images[index], index, label_);
}

std::span<const std::byte> FatBinary::image_frame(size_t index) const {
  if (index >= manifest_.images.size())
    throw Error(ErrorCode::InvalidArgument, label_ + ": image index " + std::to_string(index) +
                                                " out of range (the file has " +
                                                std::to_string(manifest_.images.size()) + " images)");
  const Image& im = manifest_.images[index];
  // parse() proved offset + size lies inside data_.
  return data_.subspan(im.offset, im.size);
}

std::vector<std::byte> FatBinary::check_image(std::span<const std::byte> frame, const Image& im, size_t index,
                                              const std::string& label) {
  uint64_t sum = fnv1a64(frame);
  if (sum != im.checksum)
    fail(label, image_field(index, "checksum"), "mismatch: the manifest says " + checksum_hex(im.checksum) +
                                                     ", the image bytes hash to " + checksum_hex(sum) +
                                                     " (the image is corrupt)");
  size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size))
    fail(label, image_field(index, ""), std::string("not a zstd frame: ") + ZSTD_getErrorName(frame_size));
  if (frame_size != frame.size())
    fail(label, image_field(index, "size"), "the zstd frame is " + std::to_string(frame_size) +
                                                 " bytes but the image is " + std::to_string(frame.size()));
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) fail(label, image_field(index, ""), "not a zstd frame");
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN)
    fail(label, image_field(index, "raw_size"), "the zstd frame does not record its content size");
  if (declared > limits::kMaxImageRawBytes)
    fail(label, image_field(index, "raw_size"), "the zstd frame declares " + std::to_string(declared) +
                                                     " bytes, over the " +
                                                     std::to_string(limits::kMaxImageRawBytes) + "-byte limit");
  if (declared != im.raw_size)
    fail(label, image_field(index, "raw_size"), "the manifest says " + std::to_string(im.raw_size) +
                                                     " bytes, the zstd frame declares " + std::to_string(declared));
  return decompress_bounded(frame, im.raw_size, label, image_field(index, ""), image_field(index, "raw_size"));
}

int FatBinary::find_image(Target target, std::string_view arch) const {
  for (size_t i = 0; i < manifest_.images.size(); ++i) {
    const Image& im = manifest_.images[i];
    if (im.target == target && (arch.empty() || im.arch == arch)) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::byte> compress_image(std::span<const std::byte> data, int zstd_level) {
  std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) throw Error(ErrorCode::OutOfMemory, "cannot create a zstd compression context");
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);  // readers require it
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);     // zstd's own content check
  std::vector<std::byte> frame(ZSTD_compressBound(data.size()));
  size_t n = ZSTD_compress2(cctx.get(), frame.data(), frame.size(), data.data(), data.size());
  if (ZSTD_isError(n))
    throw Error(ErrorCode::InvalidArgument, std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  frame.resize(n);
  return frame;
}

std::vector<std::byte> write_fatbin(Manifest manifest, std::span<const ImageInput> images, int zstd_level,
                                    unsigned threads) {
  if (zstd_level < 1 || zstd_level > ZSTD_maxCLevel())
    throw Error(ErrorCode::InvalidArgument, "write_fatbin: zstd level " + std::to_string(zstd_level) +
                                                " is outside 1.." + std::to_string(ZSTD_maxCLevel()));
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageInput& in = images[i];
    if (in.data.empty() || in.data.size() > limits::kMaxImageRawBytes)
      throw Error(ErrorCode::InvalidArgument, "write_fatbin: image " + std::to_string(i) + " (" +
                                                  std::string(to_string(in.target)) + " " + in.arch + ") has " +
                                                  std::to_string(in.data.size()) + " bytes; allowed: 1.." +
                                                  std::to_string(limits::kMaxImageRawBytes));
  }

  // One frame per image, each from its own context: any number of threads gives the same bytes.
  // Level 19 takes seconds per megabyte, and an op library has a dozen images.
  std::vector<std::vector<std::byte>> frames(images.size());
  std::vector<std::string> errors(images.size());
  std::atomic<size_t> next{0};
  auto compress_some = [&] {
    for (size_t i; (i = next.fetch_add(1)) < images.size();) {
      const ImageInput& in = images[i];
      try {
        if (in.frame.empty()) {
          frames[i] = compress_image(in.data, zstd_level);
        } else if (ZSTD_getFrameContentSize(in.frame.data(), in.frame.size()) != in.data.size()) {
          errors[i] = "its frame does not hold its " + std::to_string(in.data.size()) + " bytes";
        } else {
          frames[i] = in.frame;
        }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < std::min<size_t>(std::max(threads, 1u), images.size()); ++t) helpers.emplace_back(compress_some);
  compress_some();
  for (std::thread& t : helpers) t.join();

  manifest.images.clear();
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageInput& in = images[i];
    if (!errors[i].empty()) throw Error(ErrorCode::InvalidArgument, "write_fatbin: image " + std::to_string(i) + ": " + errors[i]);
    const std::vector<std::byte>& frame = frames[i];
    const size_t n = frame.size();
    Image im;
    im.target = in.target;
    im.arch = in.arch;
    im.size = n;
    im.raw_size = in.data.size();
    im.checksum = fnv1a64(frame);
    im.kernels = in.kernels;
    im.requirements = in.requirements;
    im.programmatic_launch = in.programmatic_launch;
    manifest.images.push_back(std::move(im));
  }

  // Image offsets appear in the manifest, which precedes the images: grow the space reserved
  // for the manifest until its text (whose length depends on the offsets) fits.
  auto align = [](uint64_t x) { return (x + kImageAlignment - 1) / kImageAlignment * kImageAlignment; };
  std::string text;
  uint64_t reserved = 0;
  for (;;) {
    uint64_t at = align(kHeaderSize + reserved);
    for (size_t i = 0; i < frames.size(); ++i) {
      manifest.images[i].offset = at;
      at = align(at + frames[i].size());
    }
    try {
      text = manifest_to_json(manifest);
    } catch (const std::exception& e) {  // nlohmann refuses strings that are not UTF-8
      throw Error(ErrorCode::InvalidArgument, std::string("write_fatbin: cannot encode the manifest: ") + e.what());
    }
    if (text.size() <= reserved) break;
    reserved = text.size();
  }
  uint64_t file_size = kHeaderSize + text.size();
  if (!frames.empty()) file_size = manifest.images.back().offset + frames.back().size();

  std::vector<std::byte> out(file_size, std::byte{0});
  std::memcpy(out.data() + off::kMagic, kMagic, sizeof(kMagic));
  store_le<uint16_t>(out, off::kMajor, kFormatMajor);
  store_le<uint16_t>(out, off::kMinor, kFormatMinor);
  store_le<uint32_t>(out, off::kHeaderSize, kHeaderSize);
  store_le<uint64_t>(out, off::kFileSize, file_size);
  store_le<uint64_t>(out, off::kManifestOffset, kHeaderSize);
  store_le<uint64_t>(out, off::kManifestSize, text.size());
  std::memcpy(out.data() + kHeaderSize, text.data(), text.size());
  store_le<uint64_t>(out, off::kManifestChecksum,
                     fnv1a64(std::span<const std::byte>(out).subspan(kHeaderSize, text.size())));
  store_le<uint32_t>(out, off::kFlags, 0);
  store_le<uint32_t>(out, off::kReserved, 0);
  for (size_t i = 0; i < frames.size(); ++i)
    std::memcpy(out.data() + manifest.images[i].offset, frames[i].data(), frames[i].size());
  store_le<uint64_t>(out, off::kHeaderChecksum, header_checksum(out, kHeaderSize));

  // The reader's checks are the definition of a valid file: run them so that a packer bug
  // (a kernel listing a target with no image, a duplicate symbol, ...) surfaces here.
  try {
    (void)FatBinary::parse(out, "write_fatbin");
  } catch (const Error& e) {
    throw Error(ErrorCode::InvalidArgument, std::string("write_fatbin: refusing to write an invalid file: ") +
                                                e.what());
  }
  return out;
}

}  // namespace quiver::format
