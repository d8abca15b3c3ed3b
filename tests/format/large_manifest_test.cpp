// Valid fat binaries at the format's limits (docs/format.md, "Limits"): a manifest of ~16 MiB
// whose objects carry a million unknown keys (legal: minor versions extend the manifest that
// way), 4096 kernels listed by each of 256 images, multi-megabyte strings, arrays of ~2 million
// values. Each must be read, or refused with the right message, in time linear in its size: a
// reader that compares every key with every earlier key of its object spends hours inside
// Device::load on the first of them. The bound allows for ASan + UBSan on a loaded 2-core
// machine and is still far below what any quadratic step costs at these sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "format/fatbin.h"
#include "qfb_builder.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;
using namespace qfb_test;

namespace {

constexpr uint64_t kManifestLimit = 16ull << 20;   // docs/format.md: manifest ≤ 16 MiB
constexpr size_t kValueLimit = 2'000'000;          // ... and ≤ 2,000,000 JSON values

// CPU seconds a read of a `bytes`-long manifest may take: a constant for the fixed costs plus
// a rate that ASan + UBSan meet with a wide margin (measured: ~2.4 s for 12 MB). Processor time,
// not wall time, so that other jobs on a busy CI machine do not count.
double budget_s(size_t bytes) { return 3.0 + 0.75 * static_cast<double>(bytes) / (1 << 20); }

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The sample's file with its manifest text replaced by edit(text): the images lie after
// `reserve` bytes kept for the manifest, so a longer text leaves their offsets valid.
Bytes with_manifest(const Parts& parts, const std::function<std::string(const std::string&)>& edit) {
  Layout layout;
  layout.manifest_reserve = kManifestLimit;
  Bytes file = assemble(parts, {}, layout);
  const std::string text(reinterpret_cast<const char*>(file.data()) + layout.header_size,
                         load_u64(file, hdr::kManifestSize));
  const std::string edited = edit(text);
  EXPECT_LE(edited.size(), kManifestLimit) << "the test's manifest does not fit the format's limit";
  std::memcpy(file.data() + layout.header_size, edited.data(), std::min<size_t>(edited.size(), kManifestLimit));
  store_u64(file, hdr::kManifestSize, std::min<size_t>(edited.size(), kManifestLimit));
  reseal_manifest(file);
  return file;
}

// `count` distinct unknown members "x0000000":0, ... (13 bytes each), each followed by a comma.
std::string unknown_members(size_t count, size_t first = 0) {
  std::string s;
  s.reserve(count * 13);
  char member[32];
  for (size_t i = first; i < first + count; ++i) {
    std::snprintf(member, sizeof member, "\"x%07zu\":0,", i);
    s += member;
  }
  return s;
}

// Inserts `members` (ending in a comma) as the first members of the object that begins at
// the first occurrence of `opening` ("{" for the document).
std::string insert_members(const std::string& text, const std::string& opening, const std::string& members) {
  const size_t at = text.find(opening);
  EXPECT_NE(at, std::string::npos) << opening;
  std::string out = text;
  out.insert(at + opening.size(), members);
  return out;
}

struct Timed {
  std::optional<qf::FatBinary> fb;
  std::string error;
  double seconds = 0;
};

Timed read(const Bytes& file) {
  Timed t;
  const double start = cpu_seconds();
  try {
    t.fb.emplace(qf::FatBinary::parse(file, "large.qfb"));
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidFatBinary) << e.what();
    t.error = e.what();
  }
  t.seconds = cpu_seconds() - start;
  return t;
}

void expect_in_time(const Timed& t, const Bytes& file) {
  const size_t manifest = load_u64(file, hdr::kManifestSize);
  EXPECT_LT(t.seconds, budget_s(manifest))
      << "reading a file with a " << manifest << "-byte manifest took " << t.seconds << " CPU s";
  std::printf("  a %zu-byte manifest read in %.3f CPU s%s\n", manifest, t.seconds, t.fb ? "" : " (refused)");
}

class LargeManifest : public ::testing::Test {
 protected:
  std::mt19937_64 rng{std::random_device{}()};
  Parts parts = sample_parts(rng);
};

}  // namespace

// Up to a million unknown keys in the document's object: read, and the sample's content is
// intact. The sizes grow so that a reader slower than linear fails early on the smaller ones.
TEST_F(LargeManifest, MillionUnknownKeysAreRead) {
  for (size_t count : {30'000u, 120'000u, 990'000u}) {
    const Bytes file = with_manifest(parts, [&](const std::string& text) {
      return insert_members(text, "{", unknown_members(count));
    });
    const Timed t = read(file);
    ASSERT_TRUE(t.fb) << count << " keys: " << t.error;
    EXPECT_EQ(t.fb->manifest().kernels.size(), 2u);
    EXPECT_EQ(t.fb->manifest().kernels[0].name, "saxpy");
    EXPECT_EQ(t.fb->manifest().images.size(), 3u);
    expect_in_time(t, file);
  }
}

// A repeated key among a million others is still found, with its path, in linear time; the
// earliest repeat in the text is the one named.
TEST_F(LargeManifest, RepeatedKeyAmongAMillionIsNamed) {
  const Bytes top = with_manifest(parts, [&](const std::string& text) {
    return insert_members(text, "{", unknown_members(980'000) + "\"x0000007\":1,");
  });
  Timed t = read(top);
  ASSERT_FALSE(t.fb);
  EXPECT_NE(t.error.find("manifest field 'x0000007': the key appears twice in one object"), std::string::npos)
      << t.error;
  expect_in_time(t, top);

  // In a parameter object of the second kernel, and a later repeat at the end of the document's
  // object.
  const Bytes nested = with_manifest(parts, [&](const std::string& text) {
    std::string s = insert_members(text, "{\"access\":\"read\",\"buffer\":true,\"name\":\"in\"",
                                   "," + unknown_members(490'000) + "\"x0000003\":1");
    s = insert_members(s, "{", unknown_members(490'000, 1));
    s.insert(s.size() - 1, ",\"x0000002\":1");
    return s;
  });
  t = read(nested);
  ASSERT_FALSE(t.fb);
  EXPECT_NE(t.error.find("manifest field 'kernels[1].params[0].x0000003': the key appears twice"),
            std::string::npos)
      << t.error;
  expect_in_time(t, nested);
}

// A repeated key holding control characters (JSON escapes of NUL and a tab) is named with them
// written as \u00XX: a raw NUL would end the message at the key.
TEST_F(LargeManifest, RepeatedKeyWithControlCharactersIsNamedPrintably) {
  const Bytes file = with_manifest(parts, [&](const std::string& text) {
    return insert_members(text, "{", "\"target\\u0000s\\t\":1,\"target\\u0000s\\t\":2,");
  });
  const Timed t = read(file);
  ASSERT_FALSE(t.fb);
  EXPECT_NE(t.error.find("manifest field 'target\\u0000s\\u0009': the key appears twice in one object"),
            std::string::npos)
      << t.error;
}

// Over the value limit: refused before any tree is built, and as quickly.
TEST_F(LargeManifest, OverTheValueLimitIsRefused) {
  const Bytes file = with_manifest(parts, [&](const std::string& text) {
    return insert_members(text, "{", unknown_members(kValueLimit / 2 + 10));
  });
  const Timed t = read(file);
  ASSERT_FALSE(t.fb);
  EXPECT_NE(t.error.find("more than 2000000 JSON values"), std::string::npos) << t.error;
  expect_in_time(t, file);
}

// The most kernels (4096), the most images (256, eight targets of 32 archs each), every image
// listing every kernel: a million cross references.
TEST_F(LargeManifest, EveryImageListsEveryKernel) {
  static const char* const kTargets[] = {"ptx", "cubin", "spirv", "cpu", "hsaco", "msl", "metallib", "wgsl"};
  Parts p;
  p.manifest = {{"compiler_version", ""}, {"source_hash", ""}, {"kernels", json::array()}, {"images", json::array()}};
  std::vector<std::string> symbols;
  for (int k = 0; k < 4096; ++k) {
    symbols.push_back("k" + std::to_string(k));
    p.manifest["kernels"].push_back({{"name", symbols.back()},
                                     {"symbol", symbols.back()},
                                     {"params", json::array()},
                                     {"block", {1, 1, 1}},
                                     {"shared_bytes", 0},
                                     {"targets", kTargets},
                                     {"uses_barrier", false}});
  }
  for (const char* target : kTargets) {
    for (int a = 0; a < 32; ++a) {
      p.raw.push_back(random_bytes(rng, 16));
      p.frames.push_back(compress(p.raw.back()));
      p.manifest["images"].push_back({{"target", target}, {"arch", "a" + std::to_string(a)}, {"kernels", json::array()}});
    }
  }
  // Each image's empty list becomes the list of all symbols (text, not a JSON tree of a million
  // strings: quicker to build).
  const std::string listed = "\"kernels\":" + json(symbols).dump();
  const Bytes file = with_manifest(p, [&](const std::string& text) {
    std::string out;
    size_t from = 0;
    for (size_t at; (at = text.find("\"kernels\":[]", from)) != std::string::npos; from = at + 12)
      out.append(text, from, at - from).append(listed);
    return out.append(text, from);
  });
  const Timed t = read(file);
  ASSERT_TRUE(t.fb) << t.error;
  EXPECT_EQ(t.fb->manifest().kernels.size(), 4096u);
  ASSERT_EQ(t.fb->manifest().images.size(), 256u);
  EXPECT_EQ(t.fb->manifest().images[255].kernels.size(), 4096u);
  EXPECT_EQ(t.fb->manifest().images[255].kernels[4095], "k4095");
  expect_in_time(t, file);
}

// The SPIR-V target's layout at the kernel limit: an image per kernel and arch, 4096 kernels in
// two archs, 8192 images sharing two (target, arch) pairs. Read in linear time; a kernel listed
// by a second image of one (target, arch) is refused naming that image's entry.
TEST_F(LargeManifest, AnImagePerKernelAndArch) {
  static const char* const kArchs[] = {"vulkan1.2", "vulkan1.3_coopmat"};
  Parts p;
  p.manifest = {{"compiler_version", ""}, {"source_hash", ""}, {"kernels", json::array()}, {"images", json::array()}};
  for (int k = 0; k < 4096; ++k)
    p.manifest["kernels"].push_back({{"name", "k" + std::to_string(k)},
                                     {"symbol", "k" + std::to_string(k)},
                                     {"params", json::array()},
                                     {"block", {1, 1, 1}},
                                     {"shared_bytes", 0},
                                     {"targets", {"spirv"}},
                                     {"uses_barrier", false}});
  for (const char* arch : kArchs)
    for (int k = 0; k < 4096; ++k) {
      p.raw.push_back(random_bytes(rng, 16));
      p.frames.push_back(compress(p.raw.back()));
      p.manifest["images"].push_back({{"target", "spirv"}, {"arch", arch}, {"kernels", {"k" + std::to_string(k)}}});
    }
  const auto same = [](const std::string& text) { return text; };
  Bytes file = with_manifest(p, same);
  Timed t = read(file);
  ASSERT_TRUE(t.fb) << t.error;
  ASSERT_EQ(t.fb->manifest().images.size(), 8192u);
  EXPECT_EQ(t.fb->manifest().images[8191].kernels, std::vector<std::string>{"k4095"});
  expect_in_time(t, file);

  p.manifest["images"][4096 + 7]["kernels"] = {"k5"};   // k5 twice in vulkan1.3_coopmat, k7 in none
  file = with_manifest(p, same);
  t = read(file);
  ASSERT_FALSE(t.fb);
  EXPECT_NE(t.error.find("images[4103].kernels[0]"), std::string::npos) << t.error;
  EXPECT_NE(t.error.find("second image for spirv vulkan1.3_coopmat"), std::string::npos) << t.error;
  expect_in_time(t, file);
}

// Long strings (an 8 MiB key, a 7 MiB value) and a wide array (1.9 million values) in unknown
// members.
TEST_F(LargeManifest, LongStringsAndWideArraysAreRead) {
  const std::string key(8u << 20, 'k'), value(7u << 20, 'v');
  Bytes file = with_manifest(parts, [&](const std::string& text) {
    return insert_members(text, "{", "\"" + key + "\":\"" + value + "\",");
  });
  Timed t = read(file);
  ASSERT_TRUE(t.fb) << t.error;
  expect_in_time(t, file);

  std::string zeros = "\"wide\":[0";
  for (size_t i = 1; i < 1'900'000; ++i) zeros += ",0";
  file = with_manifest(parts, [&](const std::string& text) { return insert_members(text, "{", zeros + "],"); });
  t = read(file);
  ASSERT_TRUE(t.fb) << t.error;
  expect_in_time(t, file);
}
