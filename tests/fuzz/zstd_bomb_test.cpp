// Decompression bombs: FatBinary::image_data must stay within the sizes the file declares and
// the 1 GiB hard limit, and must not allocate what a frame merely claims (docs/format.md,
// "Reading"). Peak heap use is measured by replacing the global operator new: the output
// buffer is the only large allocation the reader makes with it (zstd's own window is bounded
// by min(window, raw_size) inside zstd).
#include <gtest/gtest.h>

#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "format/fatbin.h"
#include "qfb_builder.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;
using namespace qfb_test;

namespace {
std::atomic<size_t> g_live{0}, g_peak{0};
std::atomic<bool> g_counting{false};

void note_alloc(size_t n) {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  size_t now = g_live.fetch_add(n) + n;
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {}
}
}  // namespace

// Sized: each block records its size in a 16-byte prefix so operator delete can subtract it.
void* operator new(size_t n) {
  void* p = std::malloc(n + 16);
  if (!p) throw std::bad_alloc();
  *static_cast<size_t*>(p) = n;
  note_alloc(n);
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  char* base = static_cast<char*>(p) - 16;
  size_t n = *reinterpret_cast<size_t*>(base);
  if (g_counting.load(std::memory_order_relaxed)) g_live.fetch_sub(std::min(n, g_live.load()));
  std::free(base);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace {

constexpr const char* kLabel = "bomb.qfb";

// Runs image_data(index) and returns the largest number of bytes held through operator new at
// any moment of the call (beyond what was held before it), and its error message ("" if none).
struct Outcome {
  size_t peak_bytes = 0;
  std::string error;
  std::vector<std::byte> data;
};
Outcome read_image(const Bytes& file, size_t index) {
  qf::FatBinary fb = qf::FatBinary::parse(file, kLabel);
  Outcome o;
  g_live = 0;
  g_peak = 0;
  g_counting = true;
  try {
    o.data = fb.image_data(index);
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidFatBinary) << e.what();
    o.error = e.what();
  }
  g_counting = false;
  o.peak_bytes = g_peak;
  return o;
}

// Image 2 of sample_parts() replaced by `frame`, with the manifest's raw_size `raw_size`.
Bytes file_with_image(Parts& p, Bytes frame, uint64_t raw_size) {
  p.frames[2] = std::move(frame);
  return assemble(p, [raw_size](json& m) { m["images"][2]["raw_size"] = raw_size; });
}

constexpr size_t kMiB = 1u << 20;

TEST(ZstdBomb, FrameHoldingFarMoreThanItDeclaresStopsAtTheDeclaredSize) {
  std::mt19937_64 rng(std::random_device{}());
  Parts p = sample_parts(rng);
  Bytes zeros(256 * kMiB, std::byte{0});           // ~8 KiB compressed: a ratio of 30000
  Bytes frame = compress(zeros);
  ASSERT_LT(frame.size(), 64u * 1024);
  patch_frame_content_size(frame, 4096);           // both the frame and the manifest say 4 KiB
  Outcome o = read_image(file_with_image(p, frame, 4096), 2);
  EXPECT_NE(o.error.find("images[2]"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("zstd"), std::string::npos) << o.error;
  EXPECT_LT(o.peak_bytes, 1 * kMiB) << "the reader allocated for data beyond the declared size";
}

// A frame with a 128 KiB window (not "single segment", so its window does not grow with the
// content size a test writes into it).
Bytes compress_small_window(std::span<const std::byte> raw) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 17);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  Bytes out(ZSTD_compressBound(raw.size()));
  size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) throw std::runtime_error("zstd compression failed in the test");
  out.resize(n);
  return out;
}

TEST(ZstdBomb, FrameClaimingAGigabyteItDoesNotHoldAllocatesOnlyWhatItDecodes) {
  // 512 KiB of data in a frame claiming 1 GiB, the manifest agreeing: every size check passes
  // and the data ends 1 GiB early. Before the output grew with the data, this allocated 1 GiB.
  std::mt19937_64 rng(std::random_device{}());
  Parts p = sample_parts(rng);
  Bytes frame = compress_small_window(random_bytes(rng, 512 * 1024, 3));
  patch_frame_content_size(frame, qf::limits::kMaxImageRawBytes);
  Outcome o = read_image(file_with_image(p, frame, qf::limits::kMaxImageRawBytes), 2);
  EXPECT_NE(o.error.find("images[2]"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("zstd"), std::string::npos) << o.error;
  EXPECT_LT(o.peak_bytes, 4 * kMiB) << "the reader allocated what the frame claims, not what it holds";
}

TEST(ZstdBomb, SingleSegmentFrameClaimingAGigabyteIsRefusedForItsWindow) {
  // A small frame whose window is its content size: claiming 1 GiB asks zstd for a 1 GiB
  // window, over the reader's 128 MiB window limit.
  std::mt19937_64 rng(std::random_device{}());
  Parts p = sample_parts(rng);
  Bytes frame = compress(random_bytes(rng, 70000, 3));
  ASSERT_TRUE((static_cast<uint8_t>(frame[4]) >> 5) & 1) << "expected a single-segment frame";
  patch_frame_content_size(frame, qf::limits::kMaxImageRawBytes);
  Outcome o = read_image(file_with_image(p, frame, qf::limits::kMaxImageRawBytes), 2);
  EXPECT_NE(o.error.find("images[2]"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("zstd"), std::string::npos) << o.error;
  EXPECT_LT(o.peak_bytes, 1 * kMiB);
}

TEST(ZstdBomb, SmallDeclaredSizeWithAHugeFrameIsRefusedBeforeDecoding) {
  std::mt19937_64 rng(std::random_device{}());
  Parts p = sample_parts(rng);
  Bytes frame = compress(random_bytes(rng, 70000, 3));
  patch_frame_content_size(frame, 3ull << 30);     // over the 1 GiB hard limit
  Outcome o = read_image(file_with_image(p, frame, 100), 2);
  EXPECT_NE(o.error.find("images[2].raw_size"), std::string::npos) << o.error;
  EXPECT_LT(o.peak_bytes, 64u * 1024);
}

TEST(ZstdBomb, HonestHighlyCompressedImageDecompressesWithinOneAndAHalfTimesItsSize) {
  std::mt19937_64 rng(std::random_device{}());
  Parts p = sample_parts(rng);
  const size_t n = 96 * kMiB + 12345;              // not a power of two: the last growth step is clamped
  Bytes raw(n, std::byte{0});
  for (size_t i = 0; i < n; i += 4096) raw[i] = static_cast<std::byte>(rng());
  Bytes frame = compress(raw);
  Outcome o = read_image(file_with_image(p, frame, n), 2);
  ASSERT_EQ(o.error, "");
  EXPECT_TRUE(o.data == raw) << "the image's bytes differ from what was compressed";
  EXPECT_LE(o.peak_bytes, n + n / 2 + kMiB);
}

}  // namespace
