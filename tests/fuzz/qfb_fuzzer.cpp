// libFuzzer target for the .qfb reader (FatBinary::parse, image_data) and the manifest parser
// (manifest_from_json), built with clang's -fsanitize=fuzzer,address,undefined (CMakeLists.txt
// here). The contract under test (docs/format.md): any input is either accepted or refused with
// quiver::Error(InvalidFatBinary) whose message names the file and the field at fault. Anything
// else that escapes — another exception type, a sanitizer report, a leak, a hang — is a finding.
//
// An input starting with 'Q' (the first magic byte) is a whole file, one starting with 'R' a
// manifest text to be repeated out to a large one (read_repeated), anything else manifest text.
// Random damage to a file is almost always caught by its FNV checksums, which a fuzzer
// cannot invert, so each file is parsed twice: as given (the checksum checks themselves), and
// "resealed" — file_size, the manifest and header checksums and the images' checksums
// recomputed for whatever bytes are there — which lets mutations reach the manifest's
// validation, the image layout checks and zstd decompression.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/fatbin.h"
#include "format/manifest.h"
#include "quiver/runtime.h"

namespace qf = quiver::format;

namespace {

constexpr const char* kLabel = "fuzz.qfb";

// Header byte positions from docs/format.md ("Header").
constexpr size_t kHeaderSizeAt = 12, kFileSizeAt = 16, kManifestOffsetAt = 24, kManifestSizeAt = 32,
                 kManifestChecksumAt = 40, kHeaderChecksumAt = 56, kMinHeader = 64;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "qfb_fuzzer: contract violated: %s\n", what.c_str());
  std::abort();
}

// A rejection must be InvalidFatBinary and say which file and which field.
void check_rejection(const quiver::Error& e) {
  const std::string msg = e.what();
  if (e.code() != quiver::ErrorCode::InvalidFatBinary)
    finding("error code " + std::to_string(static_cast<int>(e.code())) + " for: " + msg);
  const std::string prefix = std::string(kLabel) + ": invalid fat binary: ";
  if (msg.rfind(prefix, 0) != 0) finding("message does not start with '" + prefix + "': " + msg);
  // "<field>: <what>" follows; both parts must be non-empty.
  const size_t colon = msg.find(": ", prefix.size());
  if (colon == std::string::npos || colon == prefix.size() || colon + 2 >= msg.size())
    finding("message does not name a field and a fault: " + msg);
}

uint64_t load_u64(const std::vector<std::byte>& b, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}
void store_u64(std::vector<std::byte>& b, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// Recomputes file_size and the manifest and header checksums, where the fields that locate
// them lie inside the input.
void seal_header_and_manifest(std::vector<std::byte>& f) {
  if (f.size() < kMinHeader) return;
  store_u64(f, kFileSizeAt, f.size());
  uint32_t header_size = 0;
  for (size_t i = 0; i < 4; ++i) header_size |= static_cast<uint32_t>(static_cast<uint8_t>(f[kHeaderSizeAt + i])) << (8 * i);
  const uint64_t mo = load_u64(f, kManifestOffsetAt), ms = load_u64(f, kManifestSizeAt);
  if (mo <= f.size() && ms <= f.size() - mo)
    store_u64(f, kManifestChecksumAt, qf::fnv1a64(std::span<const std::byte>(f).subspan(mo, ms)));
  if (header_size >= kMinHeader && header_size <= f.size()) {
    store_u64(f, kHeaderChecksumAt, 0);
    store_u64(f, kHeaderChecksumAt, qf::fnv1a64(std::span<const std::byte>(f).subspan(0, header_size)));
  }
}

// Parses a file and, when it is accepted, decompresses every image.
void read_file(std::span<const std::byte> bytes) {
  try {
    qf::FatBinary fb = qf::FatBinary::parse(bytes, kLabel);
    const qf::Manifest& m = fb.manifest();
    for (size_t i = 0; i < m.images.size(); ++i) {
      try {
        std::vector<std::byte> data = fb.image_data(i);
        if (data.size() != m.images[i].raw_size)
          finding("image " + std::to_string(i) + " decompressed to " + std::to_string(data.size()) +
                  " bytes, raw_size is " + std::to_string(m.images[i].raw_size));
      } catch (const quiver::Error& e) {
        check_rejection(e);  // damage confined to one image: the others must still be tried
      }
    }
  } catch (const quiver::Error& e) {
    check_rejection(e);
  }
}

// The file resealed: header and manifest checksums first. Image checksums matter only once the
// manifest is accepted (image_data checks them), so the reader's own parse of the resealed file
// says where the images are; each image checksum string that differs from the hash of the
// image's bytes is rewritten in place (16 hex digits either way, so the layout stays as the
// fuzzer made it; images cannot overlap the manifest, so this does not change them) and the
// file is sealed and read again. Using the reader instead of a second JSON parser halves the
// parsing per input and keeps the harness's own code out of the coverage signal.
void read_resealed(std::span<const std::byte> bytes) {
  std::vector<std::byte> f(bytes.begin(), bytes.end());
  seal_header_and_manifest(f);
  std::vector<std::pair<std::string, std::string>> fixes;  // stored hex -> actual hex
  try {
    qf::FatBinary fb = qf::FatBinary::parse(f, kLabel);
    for (const qf::Image& im : fb.manifest().images) {
      const uint64_t actual = qf::fnv1a64(std::span<const std::byte>(f).subspan(im.offset, im.size));
      if (actual != im.checksum) fixes.emplace_back(qf::checksum_hex(im.checksum), qf::checksum_hex(actual));
    }
  } catch (const quiver::Error& e) {
    check_rejection(e);
    return;
  }
  if (!fixes.empty()) {
    const uint64_t mo = load_u64(f, kManifestOffsetAt), ms = load_u64(f, kManifestSizeAt);
    std::string_view text(reinterpret_cast<const char*>(f.data() + mo), ms);
    for (const auto& [stored, actual] : fixes) {
      // The first occurrence as a JSON string; one spelled with escapes stays as it is.
      const size_t at = text.find('"' + stored + '"');
      if (at != std::string_view::npos) std::memcpy(f.data() + mo + at + 1, actual.data(), 16);
    }
    seal_header_and_manifest(f);
  }
  read_file(f);
}

// An accepted manifest must survive a round trip through the writer's JSON unchanged.
void read_manifest(std::string_view text) {
  for (bool skip_unknown : {false, true}) {
    qf::Manifest m;
    try {
      m = qf::manifest_from_json(text, kLabel, skip_unknown);
    } catch (const quiver::Error& e) {
      check_rejection(e);
      // A newer minor's reader mode differs only for unknown targets: retry only then (the
      // fuzzer's speed is what finds things).
      if (skip_unknown || std::string_view(e.what()).find("unknown target") == std::string_view::npos) return;
      continue;
    }
    const std::string again = qf::manifest_to_json(m);
    qf::Manifest back;
    try {
      back = qf::manifest_from_json(again, kLabel, skip_unknown);
    } catch (const quiver::Error& e) {
      finding(std::string("the writer's text of an accepted manifest is refused: ") + e.what());
    }
    if (qf::manifest_to_json(back) != again) finding("manifest round trip changed it");
    return;
  }
}

// Large manifests from small inputs: "R", a count byte c, then head \x01 body \x01 tail. The
// text read is head, 1 + 16 c² copies of body (fewer if they would pass max_repeated_bytes()),
// tail; each '#' in a copy becomes the copy's number, so repeated members can have distinct keys.
// The reader's limits allow 16 MiB manifests whose objects hold a million members, where a step
// slower than linear costs minutes (a timeout finding); inputs that long (-max_len) would slow
// every other mutation down, and a mutator would hardly ever write a million distinct keys.
// The texts may grow to QFB_FUZZ_REPEATED_BYTES (ctest fuzz.qfb_reader_large: 1 MiB), else to
// 4 KiB (as -max_len): the general run keeps its throughput on small inputs.
size_t max_repeated_bytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("QFB_FUZZ_REPEATED_BYTES");
    return env != nullptr && *env != '\0' ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : size_t{4} << 10;
  }();
  return bytes;
}

void read_repeated(std::string_view input) {
  if (input.size() < 2) return;
  const size_t count_byte = static_cast<uint8_t>(input[1]);
  const size_t copies = 1 + 16 * count_byte * count_byte;
  const std::string_view rest = input.substr(2);
  const size_t end_head = rest.find('\x01');
  const size_t end_body = end_head == std::string_view::npos ? end_head : rest.find('\x01', end_head + 1);
  if (end_body == std::string_view::npos) return;
  const std::string_view head = rest.substr(0, end_head), body = rest.substr(end_head + 1, end_body - end_head - 1),
                         tail = rest.substr(end_body + 1);
  std::string text(head);
  for (size_t i = 0; i < copies && !body.empty(); ++i) {
    const std::string number = std::to_string(i);
    if (text.size() + body.size() + number.size() * body.size() + tail.size() > max_repeated_bytes()) break;
    for (char c : body) {
      if (c == '#') text += number;
      else text += c;
    }
  }
  text += tail;
  read_manifest(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  if (size > 0 && data[0] == 'Q') {
    read_file(bytes);
    read_resealed(bytes);
  } else if (size > 0 && data[0] == 'R') {
    read_repeated(std::string_view(reinterpret_cast<const char*>(data), size));
  } else {
    read_manifest(std::string_view(reinterpret_cast<const char*>(data), size));
    read_file(bytes);  // the magic check on arbitrary bytes
  }
  return 0;
}
