// Damage a valid file in every way a disk, a network or an attacker might, and require that
// the reader either reads the original content or throws quiver::Error -- never crashes,
// never reads out of bounds (run this under the asan preset), never returns corrupt bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>

#include "format/fatbin.h"
#include "qfb_builder.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;
using namespace qfb_test;

namespace {

struct Sample {
  Bytes file;
  std::vector<Bytes> raw;
};

// A compact file as the library writes it, with three small images.
Sample sample(std::mt19937_64& rng) {
  Parts parts = sample_parts(rng);
  qf::FatBinary fb = qf::FatBinary::parse(assemble(parts), "sample");
  std::vector<qf::ImageInput> inputs;
  for (size_t i = 0; i < parts.raw.size(); ++i) {
    const qf::Image& im = fb.manifest().images[i];
    inputs.push_back({im.target, im.arch, parts.raw[i], im.kernels});
  }
  return {qf::write_fatbin(fb.manifest(), inputs), parts.raw};
}

enum class Outcome { Rejected, Accepted };

// Parses and reads every image. Any image that comes back must be byte-identical to an
// original one (with the same index when the manifest kept its order).
Outcome read_everything(const Bytes& file, const std::vector<Bytes>& originals, bool allow_other_content) {
  std::optional<qf::FatBinary> fb;
  try {
    fb.emplace(qf::FatBinary::parse(file, "damaged.qfb"));
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidFatBinary) << e.what();
    EXPECT_NE(std::string(e.what()).find("damaged.qfb"), std::string::npos) << e.what();
    return Outcome::Rejected;
  }
  bool all_read = true;
  for (size_t i = 0; i < fb->manifest().images.size(); ++i) {
    try {
      Bytes data = fb->image_data(i);
      EXPECT_EQ(data.size(), fb->manifest().images[i].raw_size);
      if (!allow_other_content) {
        EXPECT_TRUE(i < originals.size() && data == originals[i]) << "image " << i << " came back altered";
      }
    } catch (const quiver::Error& e) {
      EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidFatBinary) << e.what();
      all_read = false;
    }
  }
  return all_read ? Outcome::Accepted : Outcome::Rejected;
}

}  // namespace

TEST(Robustness, EveryTruncationIsRejected) {
  std::mt19937_64 rng(std::random_device{}());
  Sample s = sample(rng);
  ASSERT_EQ(read_everything(s.file, s.raw, false), Outcome::Accepted);
  for (size_t len = 0; len < s.file.size(); ++len) {
    Bytes cut(s.file.begin(), s.file.begin() + static_cast<std::ptrdiff_t>(len));
    cut.shrink_to_fit();  // so ASan sees the exact end of the buffer
    EXPECT_EQ(read_everything(cut, s.raw, false), Outcome::Rejected) << "truncated to " << len << " bytes";
  }
}

TEST(Robustness, EveryByteFlipIsRejectedOrHarmless) {
  std::mt19937_64 rng(std::random_device{}());
  Sample s = sample(rng);
  qf::FatBinary clean = qf::FatBinary::parse(s.file, "clean");
  // Bytes inside some checksummed region: header, manifest, images. Everything else is
  // alignment padding, which a flip may leave harmless.
  std::vector<bool> covered(s.file.size(), false);
  for (size_t i = 0; i < 64 + clean.header().manifest_size; ++i) covered[i] = true;
  for (const qf::Image& im : clean.manifest().images)
    for (uint64_t i = im.offset; i < im.offset + im.size; ++i) covered[i] = true;
  for (size_t pos = 0; pos < s.file.size(); ++pos) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      Bytes f = s.file;
      f[pos] ^= std::byte{mask};
      // Outside the covered regions (alignment padding) a flip is harmless; read_everything
      // then checks every image still comes back unchanged.
      Outcome o = read_everything(f, s.raw, false);
      if (covered[pos]) {
        EXPECT_EQ(o, Outcome::Rejected) << "flip 0x" << std::hex << int(mask) << " at " << std::dec << pos;
      }
    }
  }
}

// Re-sealing the checksums after damaging the manifest text gets the damage past the checksum
// and into the JSON and layout validation.
TEST(Robustness, ResealedManifestDamageIsRejectedOrConsistent) {
  std::mt19937_64 rng(std::random_device{}());
  Sample s = sample(rng);
  const uint64_t msize = load_u64(s.file, hdr::kManifestSize);
  const char interesting[] = "{}[]\",:0123456789-.eE \\tfnu\xff\x80";
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes f = s.file;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t pos = 64 + rng() % msize;
      f[pos] = rng() % 2 ? static_cast<std::byte>(rng()) : static_cast<std::byte>(interesting[rng() % (sizeof interesting - 1)]);
    }
    reseal_manifest(f);
    // A digit edit can move an image onto other valid-looking bytes; content must then still
    // be a whole, size-checked zstd frame, but need not be the original.
    read_everything(f, s.raw, /*allow_other_content=*/true);
  }
}

TEST(Robustness, ResealedImageDamageIsRejectedOrConsistent) {
  std::mt19937_64 rng(std::random_device{}());
  Sample s = sample(rng);
  qf::FatBinary clean = qf::FatBinary::parse(s.file, "clean");
  const uint64_t msize = load_u64(s.file, hdr::kManifestSize);
  std::string text(reinterpret_cast<const char*>(s.file.data()) + 64, msize);
  size_t rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes f = s.file;
    size_t which = rng() % clean.manifest().images.size();
    const qf::Image& im = clean.manifest().images[which];
    f[im.offset + rng() % im.size] ^= static_cast<std::byte>(1 + rng() % 255);
    // Store the damaged frame's true checksum in the manifest (same length: 16 hex digits).
    std::string old_sum = qf::checksum_hex(im.checksum);
    std::string new_sum = qf::checksum_hex(qf::fnv1a64(std::span<const std::byte>(f).subspan(im.offset, im.size)));
    size_t at = text.find(old_sum);
    ASSERT_NE(at, std::string::npos);
    std::memcpy(f.data() + 64 + at, new_sum.data(), 16);
    reseal_manifest(f);
    // zstd's own content checksum (which the writer enables) catches what FNV no longer does;
    // a flip that leaves the output unchanged (an unused table entry) is accepted, and
    // read_everything then requires the original bytes.
    rejected += read_everything(f, s.raw, /*allow_other_content=*/false) == Outcome::Rejected;
  }
  EXPECT_GT(rejected, 2850u);
}
