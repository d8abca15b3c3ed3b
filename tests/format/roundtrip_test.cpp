// write_fatbin -> parse round trips on random manifests and images, plus the pieces of the
// format the reader and the document must agree on (FNV-1a vectors, header fields, layout).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>

#include "format/fatbin.h"
#include "qfb_builder.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;
using qfb_test::Bytes;

namespace {

constexpr qf::ScalarType kAllTypes[] = {
    qf::ScalarType::Bool, qf::ScalarType::I8,  qf::ScalarType::U8,  qf::ScalarType::I16, qf::ScalarType::U16,
    qf::ScalarType::I32,  qf::ScalarType::U32, qf::ScalarType::I64, qf::ScalarType::U64, qf::ScalarType::F16,
    qf::ScalarType::BF16, qf::ScalarType::F32, qf::ScalarType::F64};
// Every image kind, from the format's target table: random files use each.
const std::vector<qf::Target> kAllTargets = [] {
  std::vector<qf::Target> all;
  for (const qf::TargetInfo& t : qf::targets()) all.push_back(t.target);
  return all;
}();

template <typename T>
T pick(std::mt19937_64& rng, std::span<const T> from) {
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

struct Generated {
  qf::Manifest manifest;                 // images left empty: write_fatbin fills them
  std::vector<qf::ImageInput> images;
};

// A random but valid manifest: every kernel's targets are exactly the targets of the images
// that list it.
Generated random_fatbin(std::mt19937_64& rng, size_t max_image_bytes) {
  Generated g;
  std::uniform_int_distribution<int> coin(0, 1);
  g.manifest.compiler_version = "quiverc 0.1.0 (LLVM 19.1.7) \xc3\xa9t\xc3\xa9";  // UTF-8 survives
  g.manifest.source_hash = qfb_test::hex16(rng());
  size_t nkernels = std::uniform_int_distribution<size_t>(0, 7)(rng);
  for (size_t i = 0; i < nkernels; ++i) {
    qf::Kernel k;
    k.name = i % 2 ? "scale_rows<float, " + std::to_string(rng() % 10000) + ">" : "kernel_" + std::to_string(i);
    k.symbol = "qv_k" + std::to_string(i) + "_s" + std::to_string(rng() % 1000);
    size_t nparams = std::uniform_int_distribution<size_t>(0, 16)(rng);
    for (size_t a = 0; a < nparams; ++a) {
      qf::Param p;
      p.name = a == 3 ? "" : "arg" + std::to_string(a);
      p.type = pick<qf::ScalarType>(rng, kAllTypes);
      p.vec_width = 1u << std::uniform_int_distribution<int>(0, 3)(rng);
      p.is_buffer = coin(rng);
      p.access = p.is_buffer && coin(rng) ? qf::Access::ReadWrite : qf::Access::Read;
      k.params.push_back(p);
    }
    k.block = {1u << std::uniform_int_distribution<int>(0, 6)(rng), 1u << std::uniform_int_distribution<int>(0, 2)(rng),
               1u << std::uniform_int_distribution<int>(0, 2)(rng)};
    k.shared_bytes = static_cast<uint32_t>(rng() % 65536);
    k.uses_barrier = coin(rng);
    g.manifest.kernels.push_back(k);
  }
  const char* archs[] = {"sm_80", "sm_90", "sm_90a", "vulkan1.2", "x86_64", "gfx942"};
  std::set<std::pair<qf::Target, std::string>> used;
  size_t nimages = std::uniform_int_distribution<size_t>(0, 6)(rng);
  for (size_t i = 0; i < nimages; ++i) {
    qf::ImageInput in;
    in.target = pick<qf::Target>(rng, kAllTargets);
    in.arch = pick<const char*>(rng, archs);
    if (!used.insert({in.target, in.arch}).second) continue;  // one image per (target, arch)
    size_t n = std::uniform_int_distribution<size_t>(1, max_image_bytes)(rng);
    in.data = qfb_test::random_bytes(rng, n, coin(rng) ? 256 : 4);  // incompressible or compressible
    in.programmatic_launch = coin(rng);
    for (qf::Kernel& k : g.manifest.kernels) {
      if (!coin(rng)) continue;
      in.kernels.push_back(k.symbol);
      if (std::find(k.targets.begin(), k.targets.end(), in.target) == k.targets.end()) k.targets.push_back(in.target);
    }
    g.images.push_back(std::move(in));
  }
  return g;
}

void expect_same_kernels(const qf::Manifest& a, const qf::Manifest& b) {
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const qf::Kernel &x = a.kernels[i], &y = b.kernels[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.symbol, y.symbol);
    EXPECT_EQ(x.block, y.block);
    EXPECT_EQ(x.shared_bytes, y.shared_bytes);
    EXPECT_EQ(x.targets, y.targets);
    EXPECT_EQ(x.uses_barrier, y.uses_barrier);
    ASSERT_EQ(x.params.size(), y.params.size());
    for (size_t p = 0; p < x.params.size(); ++p) {
      EXPECT_EQ(x.params[p].name, y.params[p].name);
      EXPECT_EQ(x.params[p].type, y.params[p].type);
      EXPECT_EQ(x.params[p].vec_width, y.params[p].vec_width);
      EXPECT_EQ(x.params[p].is_buffer, y.params[p].is_buffer);
      EXPECT_EQ(x.params[p].access, y.params[p].access);
    }
  }
}

}  // namespace

TEST(Fnv1a64, MatchesPublishedVectors) {
  auto h = [](std::string_view s) { return qf::fnv1a64(std::as_bytes(std::span(s.data(), s.size()))); };
  EXPECT_EQ(h(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(h("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(h("foobar"), 0x85944171f73967e8ull);
}

// The target table against docs/format.md ("Image object": the names files spell, which never
// change) and against itself: one line per enumerator, in enum order (info() indexes by it).
TEST(Names, TargetTableIsTheDocumentedNames) {
  const std::vector<std::string_view> documented = {"ptx", "cubin", "spirv", "cpu", "hsaco", "msl", "metallib", "wgsl"};
  std::vector<std::string_view> names;
  for (size_t i = 0; i < qf::kTargetCount; ++i) {
    const qf::TargetInfo& t = qf::targets()[i];
    names.push_back(t.name);
    EXPECT_EQ(static_cast<size_t>(t.target), i) << t.name;
    EXPECT_EQ(&qf::info(t.target), &t) << t.name;
    EXPECT_EQ(qf::to_string(t.target), t.name);
    EXPECT_EQ(qf::target_from_string(t.name), t.target) << t.name;
    EXPECT_FALSE(t.label.empty()) << t.name;
  }
  EXPECT_EQ(names, documented);
  // What the bytes are decides how quiver-dump --disasm shows an image without a disassembler.
  EXPECT_EQ(qf::info(qf::Target::PTX).kind, qf::ImageKind::Text);
  EXPECT_EQ(qf::info(qf::Target::MSL).kind, qf::ImageKind::Text);
  EXPECT_EQ(qf::info(qf::Target::WGSL).kind, qf::ImageKind::Text);
  EXPECT_EQ(qf::info(qf::Target::SPIRV).kind, qf::ImageKind::Binary);
  EXPECT_EQ(qf::info(qf::Target::CUBIN).kind, qf::ImageKind::Binary);
  EXPECT_EQ(qf::info(qf::Target::SPIRV).label, "SPIR-V");
}

TEST(Names, EveryEnumValueRoundTripsThroughItsName) {
  std::set<std::string_view> seen;
  for (qf::ScalarType t : kAllTypes) {
    EXPECT_EQ(qf::scalar_type_from_string(qf::to_string(t)), t);
    EXPECT_TRUE(seen.insert(qf::to_string(t)).second);
  }
  for (qf::Target t : kAllTargets) {
    EXPECT_EQ(qf::target_from_string(qf::to_string(t)), t);
    EXPECT_TRUE(seen.insert(qf::to_string(t)).second);
  }
  EXPECT_EQ(qf::to_string(qf::ScalarType::BF16), "bf16");
  EXPECT_EQ(qf::to_string(qf::ScalarType::F16), "half");
  EXPECT_EQ(qf::to_string(qf::ScalarType::U32), "uint32_t");
  EXPECT_EQ(qf::to_string(qf::Target::SPIRV), "spirv");
  EXPECT_FALSE(qf::scalar_type_from_string("float32"));
  EXPECT_FALSE(qf::target_from_string("PTX"));
  EXPECT_EQ(qf::size_of(qf::ScalarType::Bool), 1u);
  EXPECT_EQ(qf::size_of(qf::ScalarType::BF16), 2u);
  EXPECT_EQ(qf::size_of(qf::ScalarType::I32), 4u);
  EXPECT_EQ(qf::size_of(qf::ScalarType::F64), 8u);
}

TEST(RoundTrip, RandomManifestsAndImagesSurviveByteExact) {
  std::mt19937_64 rng(std::random_device{}());
  for (int iter = 0; iter < 60; ++iter) {
    Generated g = random_fatbin(rng, iter % 10 == 0 ? 300000 : 3000);
    Bytes file = qf::write_fatbin(g.manifest, g.images, iter % 3 == 0 ? 19 : 3);
    qf::FatBinary fb = qf::FatBinary::parse(file, "round-trip.qfb");
    const qf::Manifest& m = fb.manifest();
    SCOPED_TRACE("iteration " + std::to_string(iter));
    EXPECT_EQ(m.compiler_version, g.manifest.compiler_version);
    EXPECT_EQ(m.source_hash, g.manifest.source_hash);
    expect_same_kernels(g.manifest, m);
    ASSERT_EQ(m.images.size(), g.images.size());
    for (size_t i = 0; i < g.images.size(); ++i) {
      const qf::Image& im = m.images[i];
      EXPECT_EQ(im.target, g.images[i].target);
      EXPECT_EQ(im.arch, g.images[i].arch);
      EXPECT_EQ(im.kernels, g.images[i].kernels);
      EXPECT_EQ(im.programmatic_launch, g.images[i].programmatic_launch);
      EXPECT_EQ(im.raw_size, g.images[i].data.size());
      EXPECT_EQ(im.offset % 16, 0u);
      ASSERT_LE(im.offset + im.size, file.size());
      // The manifest's checksum is the FNV-1a of exactly the stored frame bytes.
      EXPECT_EQ(im.checksum, qf::fnv1a64(std::span<const std::byte>(file).subspan(im.offset, im.size)));
      EXPECT_EQ(fb.image_data(i), g.images[i].data) << "image " << i;
      EXPECT_EQ(fb.find_image(im.target, im.arch), static_cast<int>(i));
      EXPECT_LE(fb.find_image(im.target), static_cast<int>(i));
    }
    for (qf::Target t : kAllTargets) {
      bool any = std::any_of(g.images.begin(), g.images.end(), [&](auto& in) { return in.target == t; });
      EXPECT_EQ(fb.find_image(t) >= 0, any);
      EXPECT_EQ(fb.find_image(t, "no_such_arch"), -1);
    }
    for (const qf::Kernel& k : g.manifest.kernels) {
      ASSERT_NE(m.find_kernel(k.name), nullptr);
      EXPECT_EQ(m.find_kernel(k.name)->symbol, k.symbol);
    }
    EXPECT_EQ(m.find_kernel("definitely_absent"), nullptr);
    const qf::Header& h = fb.header();
    EXPECT_EQ(h.major, qf::kFormatMajor);
    EXPECT_EQ(h.minor, qf::kFormatMinor);
    EXPECT_EQ(h.header_size, 64u);
    EXPECT_EQ(h.file_size, file.size());
    EXPECT_EQ(h.manifest_offset, 64u);
    EXPECT_EQ(h.flags, 0u);
  }
}

// The writer compresses images on several threads, or takes frames its caller made (quiverc's
// build jobs): the file is the same bytes either way; a frame that does not hold its image is refused.
TEST(RoundTrip, ThreadsAndPrecompressedFramesGiveTheSameBytes) {
  std::mt19937_64 rng(std::random_device{}());
  for (int iter = 0; iter < 8; ++iter) {
    Generated g = random_fatbin(rng, 20000);
    Bytes serial = qf::write_fatbin(g.manifest, g.images, 9, 1);
    EXPECT_EQ(qf::write_fatbin(g.manifest, g.images, 9, 4), serial);
    std::vector<qf::ImageInput> framed = g.images;
    for (qf::ImageInput& in : framed) in.frame = qf::compress_image(in.data, 9);
    EXPECT_EQ(qf::write_fatbin(g.manifest, framed, 9, 2), serial);
    if (framed.size() >= 2) {
      std::swap(framed[0].frame, framed[1].frame);
      if (framed[0].data.size() != framed[1].data.size())
        EXPECT_THROW(qf::write_fatbin(g.manifest, framed, 9, 2), quiver::Error);
    }
  }
}

// parse copies the file (copies of the FatBinary keep working once the bytes are gone); view reads
// the caller's bytes in place, with the same checks: a damaged byte it reads is reported.
TEST(RoundTrip, ParseOwnsItsBytesAndViewReadsThemInPlace) {
  std::mt19937_64 rng(std::random_device{}());
  Generated g;
  do g = random_fatbin(rng, 3000);
  while (g.images.empty());
  Bytes file = qf::write_fatbin(g.manifest, g.images, 3);
  std::optional<qf::FatBinary> copy;
  {
    Bytes scratch = file;
    qf::FatBinary fb = qf::FatBinary::parse(scratch, "owned.qfb");
    copy = fb;   // a copy of an owning FatBinary owns its own bytes
    std::fill(scratch.begin(), scratch.end(), std::byte{0xA5});
  }
  qf::FatBinary moved = std::move(*copy);
  qf::FatBinary viewed = qf::FatBinary::view(file, "viewed.qfb");
  qf::FatBinary viewed_copy = viewed;
  ASSERT_EQ(moved.manifest().images.size(), g.images.size());
  for (size_t i = 0; i < g.images.size(); ++i) {
    EXPECT_EQ(moved.image_data(i), g.images[i].data) << "image " << i;
    EXPECT_EQ(viewed_copy.image_data(i), g.images[i].data) << "image " << i;
  }
  const qf::Image& last = viewed.manifest().images.back();
  file[last.offset + last.size / 2] ^= std::byte{0x01};   // the view sees the caller's bytes
  EXPECT_THROW(viewed.image_data(g.images.size() - 1), quiver::Error);
  EXPECT_EQ(moved.image_data(g.images.size() - 1), g.images.back().data);
}

TEST(RoundTrip, WriterOutputMatchesTheDocumentedHeaderLayout) {
  std::mt19937_64 rng(std::random_device{}());
  qfb_test::Parts parts = qfb_test::sample_parts(rng);
  Bytes hand = qfb_test::assemble(parts);
  qf::FatBinary by_hand = qf::FatBinary::parse(hand, "hand.qfb");
  // Re-write the hand-built file's content with the library and compare the header fields
  // that docs/format.md fixes.
  std::vector<qf::ImageInput> inputs;
  for (size_t i = 0; i < parts.raw.size(); ++i) {
    const qf::Image& im = by_hand.manifest().images[i];
    inputs.push_back({im.target, im.arch, parts.raw[i], im.kernels});
    EXPECT_EQ(by_hand.image_data(i), parts.raw[i]);
  }
  Bytes written = qf::write_fatbin(by_hand.manifest(), inputs);
  ASSERT_GE(written.size(), 64u);
  EXPECT_EQ(std::memcmp(written.data(), "QVFB\r\n\x1a\n", 8), 0);
  EXPECT_EQ(qfb_test::load_u64(written, 8) & 0xffff, 1u);                  // major
  EXPECT_EQ((qfb_test::load_u64(written, 8) >> 16) & 0xffff, 0u);          // minor
  EXPECT_EQ((qfb_test::load_u64(written, 8) >> 32) & 0xffffffff, 64u);     // header_size
  EXPECT_EQ(qfb_test::load_u64(written, 16), written.size());              // file_size
  EXPECT_EQ(qfb_test::load_u64(written, 24), 64u);                         // manifest_offset
  uint64_t msize = qfb_test::load_u64(written, 32);
  std::string text(reinterpret_cast<const char*>(written.data()) + 64, msize);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["kernels"], parts.manifest["kernels"]);
  ASSERT_EQ(j["images"].size(), parts.frames.size());
  // The checksum re-sealed by the test's own FNV matches the writer's.
  Bytes resealed = written;
  qfb_test::reseal_manifest(resealed);
  EXPECT_EQ(resealed, written);
}

TEST(RoundTrip, ReadFileAndMissingFile) {
  std::mt19937_64 rng(std::random_device{}());
  Generated g = random_fatbin(rng, 5000);
  Bytes file = qf::write_fatbin(g.manifest, g.images);
  auto path = std::filesystem::temp_directory_path() / ("qv_format_test_" + std::to_string(rng()) + ".qfb");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  }
  qf::FatBinary fb = qf::FatBinary::read_file(path.string());
  EXPECT_EQ(fb.label(), path.string());
  EXPECT_EQ(fb.manifest().images.size(), g.images.size());
  for (size_t i = 0; i < g.images.size(); ++i) EXPECT_EQ(fb.image_data(i), g.images[i].data);
  std::filesystem::remove(path);
  try {
    qf::FatBinary::read_file(path.string());
    FAIL() << "read_file of a missing file did not throw";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::NotFound);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST(RoundTrip, ManifestJsonRoundTrips) {
  std::mt19937_64 rng(std::random_device{}());
  for (int iter = 0; iter < 20; ++iter) {
    Generated g = random_fatbin(rng, 100);
    Bytes file = qf::write_fatbin(g.manifest, g.images, 1);
    qf::FatBinary fb = qf::FatBinary::parse(file, "x");
    const qf::Manifest& m = fb.manifest();
    qf::Manifest again = qf::manifest_from_json(qf::manifest_to_json(m, 2), "pretty");
    expect_same_kernels(m, again);
    ASSERT_EQ(again.images.size(), m.images.size());
    for (size_t i = 0; i < m.images.size(); ++i) {
      EXPECT_EQ(again.images[i].checksum, m.images[i].checksum);
      EXPECT_EQ(again.images[i].offset, m.images[i].offset);
      EXPECT_EQ(again.images[i].size, m.images[i].size);
      EXPECT_EQ(again.images[i].programmatic_launch, m.images[i].programmatic_launch);
    }
  }
}

// The writer runs the reader's checks and refuses to produce a file they would reject.
TEST(Writer, RefusesInconsistentInput) {
  auto expect_refused = [](const qf::Manifest& m, std::span<const qf::ImageInput> images, const char* needle,
                           int level = 3) {
    try {
      qf::write_fatbin(m, images, level);
      ADD_FAILURE() << "write_fatbin accepted input that should fail with " << needle;
    } catch (const quiver::Error& e) {
      EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  qf::Manifest m;
  qf::Kernel k;
  k.name = "saxpy";
  k.symbol = "qv_k0_saxpy";
  k.targets = {qf::Target::PTX, qf::Target::SPIRV};
  m.kernels.push_back(k);
  std::vector<qf::ImageInput> images = {{qf::Target::PTX, "sm_80", Bytes(10, std::byte{1}), {"qv_k0_saxpy"}}};
  expect_refused(m, images, "kernels[0].targets");  // no SPIR-V image
  images.push_back({qf::Target::SPIRV, "vulkan1.2", Bytes(10, std::byte{2}), {"qv_k9_missing"}});
  expect_refused(m, images, "images[1].kernels[0]");
  images[1].kernels = {"qv_k0_saxpy"};
  EXPECT_NO_THROW(qf::write_fatbin(m, images));
  expect_refused(m, images, "zstd level", 0);
  images[1].data.clear();
  expect_refused(m, images, "image 1");
  images[1].data = Bytes(3, std::byte{7});
  m.kernels.push_back(k);
  expect_refused(m, images, "kernels[1].name");
  m.kernels[1].name = "other";
  expect_refused(m, images, "kernels[1].symbol");
  m.kernels.pop_back();
  // Several images of one target and arch may exist (one per kernel); a kernel in two of them not.
  images.push_back({qf::Target::PTX, "sm_80", Bytes(4, std::byte{3}), {"qv_k0_saxpy"}});
  expect_refused(m, images, "images[2]");
  images.pop_back();
  m.kernels[0].name = "bad\xff utf8";
  expect_refused(m, images, "manifest");
}

// prefetch (what Device::load runs outside the device's lock) hands its checked, decompressed
// bytes to the next image_data of that image, once: damage done to the file after the prefetch
// is not seen by that call but by the next one, which reads the file again. An error the
// prefetch met is thrown by the image_data it was for.
TEST(Prefetch, HandsOverCheckedBytesOnce) {
  std::mt19937_64 rng(std::random_device{}());
  qfb_test::Parts parts = qfb_test::sample_parts(rng);
  Bytes file = qfb_test::assemble(parts);
  qf::FatBinary fb = qf::FatBinary::view(file, "prefetch.qfb");   // reads `file` in place
  fb.prefetch(1);
  const qf::Image& im = fb.manifest().images[1];
  file[im.offset + im.size / 2] ^= std::byte{0x55};
  EXPECT_EQ(fb.image_data(1), parts.raw[1]);
  EXPECT_EQ(fb.image_data(0), parts.raw[0]);   // not prefetched: read as usual
  try {
    (void)fb.image_data(1);
    ADD_FAILURE() << "the damaged image was read";
  } catch (const quiver::Error& e) {
    EXPECT_NE(std::string(e.what()).find("images[1].checksum"), std::string::npos) << e.what();
  }
  fb.prefetch(1);
  EXPECT_THROW((void)fb.image_data(1), quiver::Error);
  fb.prefetch(7);   // no such image: InvalidArgument, from the image_data(7) call
  try {
    (void)fb.image_data(7);
    ADD_FAILURE() << "image 7 of 3 was read";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidArgument) << e.what();
  }
}
