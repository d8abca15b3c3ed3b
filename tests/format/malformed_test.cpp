// One malformed file per case; each must be refused with quiver::Error(InvalidFatBinary) whose
// message names the file label and the field at fault.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "format/fatbin.h"
#include "qfb_builder.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;
using namespace qfb_test;

namespace {

constexpr const char* kLabel = "bad/file.qfb";

struct Case {
  const char* name;
  std::function<Bytes(Parts&)> build;
  std::vector<std::string> expected;  // substrings of the message (field names first)
  int image = -1;                     // >= 0: parse succeeds, image_data(image) must fail
};

Bytes edit(Parts& p, const std::function<void(json&)>& f) { return assemble(p, f); }

Bytes with_header_u64(Parts& p, size_t at, uint64_t v) {
  Bytes f = assemble(p);
  store_u64(f, at, v);
  reseal_header(f);
  return f;
}

// Replaces image `i`'s frame, keeping the manifest's size and checksum consistent with it.
Bytes with_frame(Parts& p, size_t i, Bytes frame, std::function<void(json&)> more = {}) {
  p.frames[i] = std::move(frame);
  return assemble(p, std::move(more));
}

std::vector<Case> cases() {
  std::vector<Case> c;
  // --- header -------------------------------------------------------------------------------
  c.push_back({"Empty", [](Parts&) { return Bytes{}; }, {"header", "truncated", "0 bytes"}});
  c.push_back({"TruncatedInMagic", [](Parts& p) {
                 Bytes f = assemble(p);
                 f.resize(5);
                 return f;
               },
               {"header", "truncated"}});
  c.push_back({"TruncatedInHeader", [](Parts& p) {
                 Bytes f = assemble(p);
                 f.resize(40);
                 return f;
               }, {"header", "truncated", "40 bytes"}});
  c.push_back({"BadMagic", [](Parts& p) {
                 Bytes f = assemble(p);
                 f[1] = std::byte{'X'};
                 return f;
               }, {"header.magic"}});
  c.push_back({"ElfFileIsNotAFatBinary", [](Parts&) {
                 Bytes f(200, std::byte{0});
                 std::memcpy(f.data(), "\x7f" "ELF", 4);
                 return f;
               }, {"header.magic", "not a quiver fat binary"}});
  c.push_back({"NewerMajor", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u16(f, hdr::kMajor, 2);
                 store_u16(f, hdr::kMinor, 3);
                 reseal_header(f);
                 return f;
               }, {"header.major", "format version 2.3", "supports format version 1"}});
  c.push_back({"MajorZero", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u16(f, hdr::kMajor, 0);
                 reseal_header(f);
                 return f;
               }, {"header.major", "0.0"}});
  c.push_back({"HeaderSizeTooSmall", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u32(f, hdr::kHeaderSize, 32);
                 return f;
               }, {"header.header_size", "32"}});
  c.push_back({"HeaderSizeAbsurd", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u32(f, hdr::kHeaderSize, 0x7fffffff);
                 return f;
               }, {"header.header_size"}});
  c.push_back({"HeaderSizeBeyondFile", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u32(f, hdr::kHeaderSize, 4000);
                 f.resize(1000);
                 return f;
               }, {"header", "truncated", "1000 bytes", "4000"}});
  c.push_back({"HeaderChecksum", [](Parts& p) {
                 Bytes f = assemble(p);
                 f[hdr::kReserved] ^= std::byte{1};
                 return f;
               }, {"header.header_checksum", "mismatch"}});
  c.push_back({"UnknownRequiredFlags", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u32(f, hdr::kFlags, 4);
                 reseal_header(f);
                 return f;
               }, {"header.flags"}});
  c.push_back({"FileSizeSaysMore", [](Parts& p) {
                 Bytes f = assemble(p);
                 f.pop_back();
                 return f;
               }, {"header.file_size", "truncated"}});
  c.push_back({"TrailingBytes", [](Parts& p) {
                 Bytes f = assemble(p);
                 f.push_back(std::byte{0});
                 return f;
               }, {"header.file_size"}});
  c.push_back({"ManifestOverlapsHeader", [](Parts& p) { return with_header_u64(p, hdr::kManifestOffset, 32); },
               {"header.manifest_offset", "overlaps"}});
  c.push_back({"ManifestOffsetPastEnd", [](Parts& p) { return with_header_u64(p, hdr::kManifestOffset, 1ull << 40); },
               {"header.manifest_offset", "past the end"}});
  c.push_back({"ManifestSizePastEnd", [](Parts& p) { return with_header_u64(p, hdr::kManifestSize, ~0ull - 10); },
               {"header.manifest_size"}});
  c.push_back({"ManifestSizeRunsOffTheEnd", [](Parts& p) {
                 Bytes f = assemble(p);
                 store_u64(f, hdr::kManifestSize, f.size() - 63);
                 reseal_header(f);
                 return f;
               }, {"header.manifest_size", "past the end"}});
  c.push_back({"ManifestSizeZero", [](Parts& p) { return with_header_u64(p, hdr::kManifestSize, 0); },
               {"header.manifest_size"}});
  c.push_back({"ManifestChecksum", [](Parts& p) {
                 Bytes f = assemble(p);
                 f[64 + 3] ^= std::byte{0x20};
                 reseal_header(f);
                 return f;
               }, {"header.manifest_checksum", "mismatch"}});
  // --- manifest JSON ------------------------------------------------------------------------
  auto text_manifest = [](std::string text) {
    return [text](Parts& p) {
      Bytes f = assemble(p);
      uint64_t size = load_u64(f, hdr::kManifestSize);
      std::string padded = text + std::string(size > text.size() ? size - text.size() : 0, ' ');
      f.resize(std::max<size_t>(f.size(), 64 + padded.size()));
      std::memcpy(f.data() + 64, padded.data(), padded.size());
      store_u64(f, hdr::kManifestSize, padded.size());
      store_u64(f, hdr::kFileSize, f.size());
      reseal_manifest(f);
      return f;
    };
  };
  c.push_back({"ManifestNotJson", text_manifest("{\"kernels\": [1, 2"), {"(document)", "not valid JSON"}});
  c.push_back({"ManifestInvalidUtf8", text_manifest("{\"compiler_version\": \"\xff\xfe\"}"), {"not valid JSON"}});
  c.push_back({"ManifestDuplicateKey", text_manifest("{\"kernels\": [], \"images\": [], \"kernels\": [1]}"),
               {"'kernels'", "appears twice"}});
  // The earliest repeat in the text is named, with its path; objects of more keys than the
  // reader compares pairwise are checked too.
  c.push_back({"ManifestDuplicateNestedKey",
               text_manifest("{\"kernels\": [{}, {\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, "
                             "\"g\": 7, \"h\": 8, \"i\": 9, \"j\": [{\"x\": 1, \"x\": 2}], \"c\": 10}], "
                             "\"images\": [], \"kernels\": 1}"),
               {"'kernels[1].j[0].x'", "appears twice"}});
  c.push_back({"ManifestDuplicateKeyInWideObject",
               text_manifest("{\"kernels\": [{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4, \"e\": 5, \"f\": 6, "
                             "\"g\": 7, \"h\": 8, \"i\": 9, \"j\": 10, \"e\": 11, \"a\": 12}], \"images\": []}"),
               {"'kernels[0].e'", "appears twice"}});
  c.push_back({"ManifestTooManyValues", [text_manifest](Parts& p) {
                 std::string text = "{\"kernels\": [";
                 for (int i = 0; i < 2'100'000; ++i) text += "0,";
                 return text_manifest(text + "0]}")(p);
               }, {"(document)", "JSON values"}});
  c.push_back({"ManifestIsArray", text_manifest("[1, 2, 3]"), {"(document)", "expected an object"}});
  c.push_back({"ManifestNestedTooDeep", text_manifest(std::string(5000, '[') + std::string(5000, ']')),
               {"nested deeper"}});
  c.push_back({"KernelsNotArray", [](Parts& p) { return edit(p, [](json& m) { m["kernels"] = "saxpy"; }); },
               {"'kernels'", "expected an array"}});
  c.push_back({"MissingImages", [](Parts& p) { return edit(p, [](json& m) { m.erase("images"); }); },
               {"'images'", "missing"}});
  c.push_back({"MissingSymbol", [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1].erase("symbol"); }); },
               {"'kernels[1].symbol'", "missing"}});
  c.push_back({"StringWhereNumber",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["shared_bytes"] = "12"; }); },
               {"'kernels[0].shared_bytes'", "expected a non-negative integer"}});
  c.push_back({"NegativeNumber",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["shared_bytes"] = -4; }); },
               {"'kernels[0].shared_bytes'"}});
  c.push_back({"FractionalVecWidth",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["params"][0]["vec_width"] = 1.5; }); },
               {"'kernels[0].params[0].vec_width'"}});
  c.push_back({"BoolAsNumber", [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["uses_barrier"] = 1; }); },
               {"'kernels[1].uses_barrier'", "expected true or false"}});
  c.push_back({"UnknownScalarType",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["params"][1]["type"] = "float128"; }); },
               {"'kernels[1].params[1].type'", "float128"}});
  c.push_back({"VecWidthThree",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["params"][0]["vec_width"] = 3; }); },
               {"'kernels[1].params[0].vec_width'", "1, 2, 4 or 8"}});
  c.push_back({"UnknownAccess",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["params"][1]["access"] = "write"; }); },
               {"'kernels[0].params[1].access'", "write"}});
  c.push_back({"WritableScalar",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["params"][2]["access"] = "read_write"; }); },
               {"'kernels[0].params[2].access'", "scalar"}});
  c.push_back({"BlockDimZero", [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["block"][1] = 0; }); },
               {"'kernels[0].block[1]'"}});
  c.push_back({"BlockTooLarge",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["block"] = {64, 32, 1}; }); },
               {"'kernels[1].block'", "2048 threads"}});
  c.push_back({"BlockTwoDims", [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["block"] = {16, 16}; }); },
               {"'kernels[0].block'", "3 dimensions"}});
  c.push_back({"AbsurdKernelCount", [](Parts& p) {
                 return edit(p, [](json& m) { m["kernels"] = json::array(); for (int i = 0; i < 5000; ++i) m["kernels"].push_back(i); });
               }, {"'kernels'", "5000 entries"}});
  c.push_back({"AbsurdParamCount", [](Parts& p) {
                 return edit(p, [](json& m) {
                   for (int i = 0; i < 70; ++i) m["kernels"][0]["params"].push_back(m["kernels"][0]["params"][0]);
                 });
               }, {"'kernels[0].params'", "limit of 64"}});
  c.push_back({"DuplicateKernelName",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["name"] = "saxpy"; }); },
               {"'kernels[1].name'", "duplicate"}});
  c.push_back({"DuplicateSymbol",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["symbol"] = "qv_k0_saxpy"; }); },
               {"'kernels[1].symbol'", "duplicate"}});
  c.push_back({"SymbolNotIdentifier",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["symbol"] = "qv k0;rm"; }); },
               {"'kernels[0].symbol'", "identifier"}});
  c.push_back({"UnknownKernelTarget",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][0]["targets"][1] = "dxil"; }); },
               {"'kernels[0].targets[1]'", "dxil"}});
  c.push_back({"KernelTargetWithoutImage",
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["targets"].push_back("wgsl"); }); },
               {"'kernels[1].targets'", "wgsl"}});
  c.push_back({"KernelTargetImageLacksIt",  // a spirv image exists but does not contain reduce
               [](Parts& p) { return edit(p, [](json& m) { m["kernels"][1]["targets"].push_back("spirv"); }); },
               {"'kernels[1].targets'", "spirv"}});
  c.push_back({"ImageListsUnknownSymbol",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][2]["kernels"][1] = "qv_k7_ghost"; }); },
               {"'images[2].kernels[1]'", "qv_k7_ghost"}});
  c.push_back({"ImageSymbolTwice", [](Parts& p) {
                 return edit(p, [](json& m) { m["images"][0]["kernels"][1] = "qv_k0_saxpy"; });
               }, {"'images[0].kernels[1]'", "twice"}});
  c.push_back({"UnknownImageTarget", [](Parts& p) { return edit(p, [](json& m) { m["images"][1]["target"] = "dxil"; }); },
               {"'images[1].target'", "dxil"}});
  // Images may share a (target, arch) (SPIR-V: one per kernel), a kernel may not be in two.
  c.push_back({"KernelInTwoImagesOfOneTargetArch", [](Parts& p) {
                 return edit(p, [](json& m) { m["images"][1]["target"] = "ptx"; m["images"][1]["arch"] = "sm_80"; });
               }, {"'images[1].kernels[0]'", "saxpy", "second image for ptx sm_80"}});
  c.push_back({"ProgrammaticLaunchNotBoolean",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["programmatic_launch"] = 1; }); },
               {"'images[0].programmatic_launch'", "true or false"}});
  c.push_back({"ChecksumNotHex", [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["checksum"] = "12345"; }); },
               {"'images[0].checksum'"}});
  c.push_back({"RawSizeAbsurd",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["raw_size"] = (1ull << 30) + 1; }); },
               {"'images[0].raw_size'", "limit"}});
  // --- image layout ---------------------------------------------------------------------------
  c.push_back({"ImageMisaligned",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][1]["offset"] = m["images"][1]["offset"].get<uint64_t>() + 4; }); },
               {"images[1].offset", "multiple of 16"}});
  c.push_back({"ImageOffsetPastEnd",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][2]["offset"] = 1ull << 50; }); },
               {"images[2].offset", "past the end"}});
  c.push_back({"ImageSizeOverflows",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][2]["size"] = ~0ull - 8; }); },
               {"images[2].size", "past the end"}});
  c.push_back({"ImageSizeZero", [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["size"] = 0; }); },
               {"images[0].size", "empty"}});
  c.push_back({"ImageOverlapsHeader", [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["offset"] = 48; }); },
               {"images[0].offset", "overlap", "the header"}});
  c.push_back({"ImageOverlapsManifest", [](Parts& p) { return edit(p, [](json& m) { m["images"][0]["offset"] = 96; }); },
               {"images[0].offset", "overlap", "the manifest"}});
  c.push_back({"ImagesOverlapEachOther",
               [](Parts& p) { return edit(p, [](json& m) { m["images"][2]["offset"] = m["images"][1]["offset"]; }); },
               {"offset", "overlap", "images["}});
  // --- image contents (checked by image_data) -------------------------------------------------
  c.push_back({"ImageChecksum", [](Parts& p) {
                 Bytes f = assemble(p);
                 f[load_u64(f, hdr::kFileSize) - 1] ^= std::byte{0x40};  // last byte of the cpu image
                 return f;
               }, {"images[2].checksum", "mismatch"}, 2});
  c.push_back({"ImageNotZstd", [](Parts& p) { return with_frame(p, 1, Bytes(40, std::byte{0x5a})); },
               {"images[1]", "not a zstd frame"}, 1});
  c.push_back({"ImageTrailingGarbage", [](Parts& p) {
                 Bytes f = p.frames[0];
                 f.push_back(std::byte{1});
                 return with_frame(p, 0, f);
               }, {"images[0].size"}, 0});
  c.push_back({"ImageTwoFrames", [](Parts& p) {
                 Bytes f = p.frames[0];
                 f.insert(f.end(), p.frames[1].begin(), p.frames[1].end());
                 return with_frame(p, 0, f);
               }, {"images[0].size", "zstd frame"}, 0});
  c.push_back({"FrameWithoutContentSize",
               [](Parts& p) { return with_frame(p, 1, compress(p.raw[1], /*content_size=*/false)); },
               {"images[1].raw_size", "content size"}, 1});
  c.push_back({"RawSizeDiffersFromFrame",
               [](Parts& p) { return edit(p, [&](json& m) { m["images"][0]["raw_size"] = p.raw[0].size() + 1; }); },
               {"images[0].raw_size", "zstd frame declares"}, 0});
  c.push_back({"FrameUnderstatesItsContent", [](Parts& p) {
                 Bytes f = p.frames[2];
                 patch_frame_content_size(f, p.raw[2].size() - 100);  // the data really holds 100 more
                 uint64_t lie = p.raw[2].size() - 100;
                 return with_frame(p, 2, f, [lie](json& m) { m["images"][2]["raw_size"] = lie; });
               }, {"images[2]", "zstd"}, 2});
  c.push_back({"FrameOverstatesItsContent", [](Parts& p) {
                 Bytes f = p.frames[1];
                 patch_frame_content_size(f, p.raw[1].size() + 5);
                 uint64_t lie = p.raw[1].size() + 5;
                 return with_frame(p, 1, f, [lie](json& m) { m["images"][1]["raw_size"] = lie; });
               }, {"images[1]", "zstd"}, 1});
  c.push_back({"FrameClaimsOverOneGiB", [](Parts& p) {
                 std::mt19937_64 rng(7);
                 p.raw[2] = random_bytes(rng, 70000, 3);  // big enough for a 4-byte content size field
                 Bytes f = compress(p.raw[2]);
                 patch_frame_content_size(f, 3ull << 30);
                 return with_frame(p, 2, f);
               }, {"images[2].raw_size", "limit"}, 2});
  return c;
}

class Malformed : public testing::TestWithParam<Case> {};

TEST_P(Malformed, IsRefusedNamingTheField) {
  const Case& c = GetParam();
  std::mt19937_64 rng(std::random_device{}());
  Parts parts = sample_parts(rng);
  Bytes file = c.build(parts);
  std::string message;
  try {
    qf::FatBinary fb = qf::FatBinary::parse(file, kLabel);
    ASSERT_GE(c.image, 0) << "parse accepted a file that should fail";
    // The other images of the file stay readable: damage is confined to one image.
    for (size_t i = 0; i < fb.manifest().images.size(); ++i)
      if (static_cast<int>(i) != c.image) {
        EXPECT_EQ(fb.image_data(i), parts.raw[i]) << "image " << i;
      }
    fb.image_data(static_cast<size_t>(c.image));
    FAIL() << "image_data(" << c.image << ") accepted a corrupt image";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidFatBinary);
    message = e.what();
  }
  EXPECT_NE(message.find(kLabel), std::string::npos) << message;
  for (const std::string& needle : c.expected) EXPECT_NE(message.find(needle), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Format, Malformed, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// The layout the SPIR-V target writes: two images of one (target, arch), a kernel each.
TEST(Malformed, ImagesSharingATargetArchWithDisjointKernelsAreAccepted) {
  std::mt19937_64 rng(std::random_device{}());
  Parts parts = sample_parts(rng);
  Bytes file = edit(parts, [](json& m) {
    m["images"][0]["kernels"] = {"qv_k1_reduce_half_128"};
    m["images"][1]["target"] = "ptx";
    m["images"][1]["arch"] = "sm_80";
    m["kernels"][0]["targets"] = {"ptx", "cpu"};   // its spirv image became a ptx one
  });
  qf::FatBinary fb = qf::FatBinary::parse(file, kLabel);
  ASSERT_EQ(fb.manifest().images.size(), 3u);
  EXPECT_EQ(fb.manifest().images[0].arch, fb.manifest().images[1].arch);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fb.image_data(i), parts.raw[i]) << "image " << i;
}

TEST(Malformed, ImageIndexOutOfRangeIsAnArgumentError) {
  std::mt19937_64 rng(1);
  Parts parts = sample_parts(rng);
  qf::FatBinary fb = qf::FatBinary::parse(assemble(parts), kLabel);
  try {
    fb.image_data(3);
    FAIL() << "no exception";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("image index 3"), std::string::npos) << e.what();
  }
}

// docs/format.md, "Versioning": a newer minor may lengthen the header and add targets; this
// reader accepts the file, ignores the header extension and skips what it does not know.
TEST(Compatibility, NewerMinorWithLongerHeaderAndUnknownTargetIsAccepted) {
  std::mt19937_64 rng(std::random_device{}());
  Parts parts = sample_parts(rng);
  parts.manifest["kernels"][0]["targets"].push_back("dxil");
  parts.manifest["images"].push_back({{"target", "dxil"}, {"arch", "sm_6_6"}, {"kernels", {"qv_k0_saxpy"}}});
  parts.raw.push_back(random_bytes(rng, 64));
  parts.frames.push_back(compress(parts.raw.back()));
  parts.manifest["future_field"] = {{"anything", 1}};
  Layout layout;
  layout.header_size = 80;
  layout.minor = 7;
  Bytes file = assemble(parts, {}, layout);
  for (size_t i = 64; i < 80; ++i) file[i] = std::byte{0x11};  // extension bytes, covered by the checksum
  reseal_header(file);
  qf::FatBinary fb = qf::FatBinary::parse(file, kLabel);
  EXPECT_EQ(fb.header().minor, 7);
  EXPECT_EQ(fb.header().header_size, 80u);
  ASSERT_EQ(fb.manifest().images.size(), 3u);
  EXPECT_EQ(fb.manifest().kernels[0].targets,
            (std::vector<qf::Target>{qf::Target::PTX, qf::Target::SPIRV, qf::Target::CPU}));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fb.image_data(i), parts.raw[i]);

  // The same file claiming minor 0 must not contain an unknown target.
  Layout same = layout;
  same.minor = 0;
  Bytes strict = assemble(parts, {}, same);
  try {
    qf::FatBinary::parse(strict, kLabel);
    FAIL() << "an unknown target in a 1.0 file was accepted";
  } catch (const quiver::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dxil"), std::string::npos) << e.what();
  }
}

// A newer minor may add image kinds: a kernel of such a file may list more targets than this
// reader has kinds (docs/format.md, "Limits": the limit is 64, not the size of the target
// table), and is read with the unknown ones dropped. Past the limit the file is refused.
TEST(Compatibility, NewerMinorKernelListingMoreTargetsThanKnownIsAccepted) {
  std::mt19937_64 rng(std::random_device{}());
  Parts parts = sample_parts(rng);
  json& targets = parts.manifest["kernels"][0]["targets"];
  const size_t known = targets.size();
  for (size_t i = 0; i <= qf::kTargetCount; ++i) {   // more new kinds than this reader has kinds
    const std::string name = "future" + std::to_string(i);
    targets.push_back(name);
    parts.manifest["images"].push_back({{"target", name}, {"arch", "a"}, {"kernels", {"qv_k0_saxpy"}}});
    parts.raw.push_back(random_bytes(rng, 16));
    parts.frames.push_back(compress(parts.raw.back()));
  }
  Layout layout;
  layout.minor = 7;
  qf::FatBinary fb = qf::FatBinary::parse(assemble(parts, {}, layout), kLabel);
  EXPECT_EQ(fb.manifest().kernels[0].targets.size(), known);
  EXPECT_EQ(fb.manifest().images.size(), 3u);

  while (targets.size() <= qf::limits::kMaxTargetsPerKernel) targets.push_back("future" + std::to_string(targets.size()));
  try {
    qf::FatBinary::parse(assemble(parts, {}, layout), kLabel);
    FAIL() << targets.size() << " targets of one kernel were accepted";
  } catch (const quiver::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'kernels[0].targets': " + std::to_string(targets.size()) +
                                         " entries exceed the limit of 64"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
