// Runs the real quiver-dump binary on a .qfb written here and checks its human output, its
// JSON (against the manifest the file was written from), the filters, --disasm per image kind,
// and its exit status and message on damaged files.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spirv-tools/libspirv.hpp>

#include "format/fatbin.h"

namespace qf = quiver::format;
namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using nlohmann::json;

namespace {

constexpr const char* kPtx = R"(//
// quiver-dump test image
//
.version 7.8
.target sm_80
.address_size 64

.visible .entry qv_k0_saxpy(
	.param .u64 qv_k0_saxpy_param_0,
	.param .u64 qv_k0_saxpy_param_1,
	.param .f32 qv_k0_saxpy_param_2,
	.param .u32 qv_k0_saxpy_param_3
)
.reqntid 256, 1, 1
{
	ret;
}
)";

constexpr const char* kSpirvAsm = R"(
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "qv_k0_saxpy"
               OpExecutionMode %main LocalSize 256 1 1
               OpName %main "qv_k0_saxpy"
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";

Bytes spirv_binary() {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::vector<uint32_t> words;
  EXPECT_TRUE(tools.Assemble(kSpirvAsm, &words));
  EXPECT_TRUE(tools.Validate(words));
  Bytes b(words.size() * 4);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void write_bytes(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int status = -1;
  std::string out, err;
};

class QuiverDump : public testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(std::random_device{}());
    dir_ = fs::temp_directory_path() / ("quiver_dump_test_" + std::to_string(rng()));
    fs::create_directories(dir_);

    qf::Kernel saxpy;
    saxpy.name = "saxpy";
    saxpy.symbol = "qv_k0_saxpy";
    saxpy.params = {{"x", qf::ScalarType::F32, 1, true, qf::Access::Read},
                    {"y", qf::ScalarType::F32, 1, true, qf::Access::ReadWrite},
                    {"a", qf::ScalarType::F32, 1, false, qf::Access::Read},
                    {"n", qf::ScalarType::U32, 1, false, qf::Access::Read}};
    saxpy.block = {256, 1, 1};
    saxpy.targets = {qf::Target::PTX, qf::Target::SPIRV, qf::Target::CPU};
    qf::Kernel reduce;
    reduce.name = "reduce<half, " + std::to_string(64 + rng() % 64) + ">";
    reduce.symbol = "qv_k1_reduce";
    reduce.params = {{"in", qf::ScalarType::F16, 4, true, qf::Access::Read},
                     {"out", qf::ScalarType::BF16, 1, true, qf::Access::ReadWrite}};
    reduce.block = {32, 4, 2};
    reduce.shared_bytes = static_cast<uint32_t>(1000 + rng() % 4000);
    reduce.uses_barrier = true;
    reduce.targets = {qf::Target::PTX};
    manifest_.compiler_version = "quiverc 0.1.0 (test " + std::to_string(rng() % 1000) + ")";
    manifest_.source_hash = "00112233445566" + std::to_string(10 + rng() % 90);
    manifest_.kernels = {saxpy, reduce};

    std::string ptx = kPtx;
    images_ = {{qf::Target::PTX, "sm_80", Bytes(ptx.size() + 1), {"qv_k0_saxpy", "qv_k1_reduce"}},
               {qf::Target::SPIRV, "vulkan1.2", spirv_binary(), {"qv_k0_saxpy"}},
               {qf::Target::CPU, "x86_64", read_bytes(QUIVER_TEST_CPU_IMAGE), {"qv_k0_saxpy"}}};
    std::memcpy(images_[0].data.data(), ptx.c_str(), ptx.size() + 1);  // NUL-terminated, as drivers want
    ASSERT_GT(images_[2].data.size(), 64u);
    file_ = dir_ / "ops.qfb";
    bytes_ = qf::write_fatbin(manifest_, images_);
    write_bytes(file_, bytes_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result dump(const std::string& args, const std::string& env = "") {
    fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    std::string cmd = env + " '" + std::string(QUIVER_DUMP_EXE) + "' " + args + " >'" + out.string() + "' 2>'" +
                      err.string() + "'";
    int rc = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }
  std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

  fs::path dir_, file_;
  qf::Manifest manifest_;
  std::vector<qf::ImageInput> images_;
  Bytes bytes_;
};

void expect_contains(const std::string& haystack, const std::string& needle) {
  EXPECT_NE(haystack.find(needle), std::string::npos) << "missing \"" << needle << "\" in:\n" << haystack;
}

// The kernels cell of image `index` in the human output's image table: what follows the image's
// checksum on the row that starts with its index.
std::string kernels_cell(const std::string& out, size_t index, const qf::Image& im) {
  size_t table = out.find("\nimages (");
  if (table == std::string::npos) return "(no image table)";
  std::istringstream lines(out.substr(table + 1));
  std::string line;
  const std::string start = "  " + std::to_string(index) + " ";
  while (std::getline(lines, line)) {
    if (line.rfind(start, 0) != 0) continue;
    size_t at = line.find(qf::checksum_hex(im.checksum));
    if (at == std::string::npos) return "(no checksum on the row: " + line + ")";
    size_t cell = line.find_first_not_of(' ', at + qf::checksum_hex(im.checksum).size());
    return cell == std::string::npos ? "" : line.substr(cell);
  }
  return "(no row for image " + std::to_string(index) + ")";
}

// The cell says how many kernels the image holds, then the first of their names in manifest
// order ("N: a; b; …"): all of them, or at least one followed by "…", within a readable width.
void expect_kernels_cell(const std::string& cell, const std::vector<std::string>& names, bool& abbreviated) {
  SCOPED_TRACE("kernels cell: " + cell);
  const std::string count = std::to_string(names.size());
  ASSERT_EQ(cell.rfind(count, 0), 0u);
  EXPECT_LE(cell.size(), 60u) << "the cell should stay short";
  if (names.empty()) {
    EXPECT_EQ(cell, count);
    return;
  }
  ASSERT_EQ(cell.compare(count.size(), 2, ": "), 0);
  std::vector<std::string> shown;
  for (size_t at = count.size() + 2;;) {
    size_t sep = cell.find("; ", at);
    shown.push_back(cell.substr(at, sep == std::string::npos ? std::string::npos : sep - at));
    if (sep == std::string::npos) break;
    at = sep + 2;
  }
  const bool more = shown.back() == "…";
  if (more) shown.pop_back();
  abbreviated = abbreviated || more;
  ASSERT_GE(shown.size(), 1u);
  if (more) ASSERT_LT(shown.size(), names.size());
  else ASSERT_EQ(shown.size(), names.size());
  for (size_t i = 0; i < shown.size(); ++i) EXPECT_EQ(shown[i], names[i]) << "name " << i;
}

// The names of the kernels an image holds, in its manifest order.
std::vector<std::string> image_kernel_names(const qf::Manifest& m, const qf::Image& im) {
  std::vector<std::string> names;
  for (const std::string& symbol : im.kernels) {
    const qf::Kernel* k = nullptr;
    for (const qf::Kernel& c : m.kernels)
      if (c.symbol == symbol) k = &c;
    names.push_back(k ? k->name : "(no kernel with symbol " + symbol + ")");
  }
  return names;
}

// Checks every image row of quiver-dump's table for `file` against what the file holds, and
// that --json lists every image's kernels in full.
void expect_image_table_matches(const std::string& out, const std::string& json_out, const qf::FatBinary& fb) {
  const qf::Manifest& m = fb.manifest();
  bool abbreviated = false;
  for (size_t i = 0; i < m.images.size(); ++i) {
    SCOPED_TRACE("image " + std::to_string(i));
    expect_kernels_cell(kernels_cell(out, i, m.images[i]), image_kernel_names(m, m.images[i]), abbreviated);
  }
  EXPECT_EQ(out.find("--json lists them all") != std::string::npos, abbreviated)
      << "the note on \"…\" appears exactly when a cell was abbreviated";
  json j = json::parse(json_out);
  ASSERT_EQ(j["manifest"]["images"].size(), m.images.size());
  for (size_t i = 0; i < m.images.size(); ++i) EXPECT_EQ(j["manifest"]["images"][i]["kernels"], m.images[i].kernels);
  ASSERT_EQ(j["manifest"]["kernels"].size(), m.kernels.size());
  for (size_t k = 0; k < m.kernels.size(); ++k) EXPECT_EQ(j["manifest"]["kernels"][k]["name"], m.kernels[k].name);
}

}  // namespace

TEST_F(QuiverDump, HumanOutputShowsHeaderKernelsAndImages) {
  Result r = dump(quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  qf::FatBinary fb = qf::FatBinary::parse(bytes_, "x");
  expect_contains(r.out, "format:       1.0");
  expect_contains(r.out, "file " + std::to_string(bytes_.size()) + " bytes");
  expect_contains(r.out, manifest_.compiler_version);
  expect_contains(r.out, manifest_.source_hash);
  expect_contains(r.out, "kernels (2 of 2)");
  expect_contains(r.out, "  saxpy\n");
  expect_contains(r.out, "  " + manifest_.kernels[1].name + "\n");
  expect_contains(r.out, "256 x 1 x 1");
  expect_contains(r.out, "32 x 4 x 2");
  expect_contains(r.out, std::to_string(manifest_.kernels[1].shared_bytes) + " bytes");
  expect_contains(r.out, "ptx, spirv, cpu");
  expect_contains(r.out, "const float*");
  expect_contains(r.out, "const vec<half, 4>*");
  expect_contains(r.out, "bf16*");
  expect_contains(r.out, "read_write");
  expect_contains(r.out, "images (3 of 3)");
  for (size_t i = 0; i < images_.size(); ++i) {
    const qf::Image& im = fb.manifest().images[i];
    expect_contains(r.out, im.arch);
    expect_contains(r.out, std::to_string(images_[i].data.size()));
    expect_contains(r.out, std::to_string(im.size));
    expect_contains(r.out, qf::checksum_hex(im.checksum));
  }
  // Short kernel lists are shown whole: no "…" and no note about it.
  EXPECT_EQ(kernels_cell(r.out, 0, fb.manifest().images[0]), "2: saxpy; " + manifest_.kernels[1].name);
  EXPECT_EQ(kernels_cell(r.out, 1, fb.manifest().images[1]), "1: saxpy");
  EXPECT_EQ(r.out.find("…"), std::string::npos);
  Result j = dump("--json " + quoted(file_));
  ASSERT_EQ(j.status, 0) << j.err;
  expect_image_table_matches(r.out, j.out, fb);
}

// An image holding many kernels (an op library's has dozens) gets its count and the first names
// in the table, and "…"; --json and --kernel still give every one.
TEST_F(QuiverDump, ImageTableAbbreviatesLongKernelLists) {
  std::mt19937_64 rng(std::random_device{}());
  const size_t count = 20 + rng() % 60;
  qf::Manifest m;
  m.compiler_version = "quiverc test";
  m.source_hash = "0123";
  // The CPU image holds the first one or two kernels, the PTX image all of them.
  const size_t few = 1 + rng() % 2;
  std::vector<std::string> symbols;
  for (size_t i = 0; i < count; ++i) {
    qf::Kernel k;
    k.name = "op" + std::to_string(i) + "_" + std::string(1 + rng() % 20, 'a' + static_cast<char>(rng() % 26)) +
             "<float, " + std::to_string(rng() % 1000) + ">";
    k.symbol = "qv_k" + std::to_string(i);
    k.block = {256, 1, 1};
    k.targets = {qf::Target::PTX};
    if (i < few) k.targets.push_back(qf::Target::CPU);
    m.kernels.push_back(k);
    symbols.push_back(k.symbol);
  }
  std::string ptx = kPtx;
  Bytes ptx_bytes(ptx.size() + 1);
  std::memcpy(ptx_bytes.data(), ptx.c_str(), ptx.size() + 1);
  std::vector<qf::ImageInput> images = {
      {qf::Target::PTX, "sm_80", ptx_bytes, symbols},
      {qf::Target::CPU, "x86_64", read_bytes(QUIVER_TEST_CPU_IMAGE), {symbols.begin(), symbols.begin() + few}}};
  fs::path file = dir_ / "many.qfb";
  write_bytes(file, qf::write_fatbin(m, images));
  qf::FatBinary fb = qf::FatBinary::read_file(file.string());

  Result r = dump(quoted(file));
  ASSERT_EQ(r.status, 0) << r.err;
  std::string cell = kernels_cell(r.out, 0, fb.manifest().images[0]);
  EXPECT_EQ(cell.rfind(std::to_string(count) + ": " + m.kernels[0].name, 0), 0u) << cell;
  EXPECT_EQ(cell.substr(cell.size() - std::string("; …").size()), "; …");
  expect_contains(r.out, "--kernel NAME shows the images holding one, --json lists them all");
  Result j = dump("--json " + quoted(file));
  ASSERT_EQ(j.status, 0) << j.err;
  expect_image_table_matches(r.out, j.out, fb);

  // --kernel on a kernel the table left out still finds it and its image.
  const qf::Kernel& last = m.kernels.back();
  r = dump("--kernel '" + last.name + "' " + quoted(file));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "kernels (1 of " + std::to_string(count) + ")");
  expect_contains(r.out, "  " + last.name + "\n");
  expect_contains(r.out, "images (1 of 2)");
}

// An image's requirements (docs/format.md "Image requirements") are listed under the table and
// kept in --json; portable images list none.
TEST_F(QuiverDump, ImageRequirementsAreShown) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<std::string> needs = {"extension:VK_KHR_cooperative_matrix",
                                    "feature:f" + std::to_string(rng() % 100000)};
  std::vector<qf::ImageInput> images = images_;
  images.push_back({qf::Target::SPIRV, "vulkan1.3_coopmat", images_[1].data, {"qv_k0_saxpy"}, needs});
  fs::path file = dir_ / "needs.qfb";
  write_bytes(file, qf::write_fatbin(manifest_, images));
  Result r = dump(quoted(file));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "  image 3 (spirv vulkan1.3_coopmat) requires: " + needs[0] + ", " + needs[1] + "\n");
  EXPECT_EQ(r.out.find("image 1 (spirv vulkan1.2) requires"), std::string::npos) << r.out;
  Result j = dump("--json " + quoted(file));
  ASSERT_EQ(j.status, 0) << j.err;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["manifest"]["images"][3]["requires"], json(needs));
  EXPECT_FALSE(doc["manifest"]["images"][1].contains("requires"));
}

#ifdef QUIVER_OPS_FATBIN
// The op library libquiver embeds, as quiverc built it: every image row of the table agrees with
// the file (count, names, order) and stays short; --json lists every kernel of every image.
TEST(QuiverDumpOpLibrary, ImageTableMatchesTheFatBinary) {
  const std::string file = QUIVER_OPS_FATBIN;
  qf::FatBinary fb = qf::FatBinary::read_file(file);
  ASSERT_FALSE(fb.manifest().images.empty());
  ASSERT_GT(fb.manifest().kernels.size(), 8u) << "the op library should hold many kernels";
  fs::path dir = fs::temp_directory_path() / ("quiver_dump_ops_" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  auto run = [&](const std::string& args) {
    std::string cmd = "'" + std::string(QUIVER_DUMP_EXE) + "' " + args + " '" + file + "' >'" +
                      (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
    int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << read_text(dir / "err");
    return read_text(dir / "out");
  };
  std::string out = run(""), json_out = run("--json");
  fs::remove_all(dir);
  expect_image_table_matches(out, json_out, fb);
  expect_contains(out, "images (" + std::to_string(fb.manifest().images.size()) + " of ");
}
#endif

TEST_F(QuiverDump, JsonMatchesTheManifestAndHeader) {
  Result r = dump("--json " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["file"], file_.string());
  EXPECT_EQ(j["header"]["major"], 1);
  EXPECT_EQ(j["header"]["minor"], 0);
  EXPECT_EQ(j["header"]["version"], "1.0");
  EXPECT_EQ(j["header"]["header_size"], 64);
  EXPECT_EQ(j["header"]["file_size"], bytes_.size());
  EXPECT_EQ(j["header"]["manifest_offset"], 64);
  uint64_t msize = j["header"]["manifest_size"];
  // The manifest in the file, read straight from the bytes, is what --json reports.
  json stored = json::parse(std::string(reinterpret_cast<const char*>(bytes_.data()) + 64, msize));
  EXPECT_EQ(j["header"]["manifest_checksum"],
            qf::checksum_hex(qf::fnv1a64(std::span<const std::byte>(bytes_).subspan(64, msize))));
  EXPECT_EQ(j["manifest"]["kernels"], stored["kernels"]);
  EXPECT_EQ(j["manifest"]["compiler_version"], manifest_.compiler_version);
  EXPECT_EQ(j["manifest"]["source_hash"], manifest_.source_hash);
  ASSERT_EQ(j["manifest"]["images"].size(), images_.size());
  for (size_t i = 0; i < images_.size(); ++i) {
    const json& im = j["manifest"]["images"][i];
    EXPECT_EQ(im["index"], i);
    EXPECT_EQ(im["target"], qf::to_string(images_[i].target));
    EXPECT_EQ(im["arch"], images_[i].arch);
    EXPECT_EQ(im["raw_size"], images_[i].data.size());
    EXPECT_EQ(im["kernels"], images_[i].kernels);
    uint64_t off = im["offset"], size = im["size"];
    ASSERT_LE(off + size, bytes_.size());
    EXPECT_EQ(im["checksum"], qf::checksum_hex(qf::fnv1a64(std::span<const std::byte>(bytes_).subspan(off, size))));
  }
  EXPECT_EQ(j["manifest"]["kernels"][0]["params"][1],
            json({{"name", "y"}, {"type", "float"}, {"vec_width", 1}, {"buffer", true}, {"access", "read_write"}}));
  EXPECT_EQ(j["manifest"]["kernels"][1]["block"], json({32, 4, 2}));
}

TEST_F(QuiverDump, KernelAndTargetFilters) {
  Result r = dump("--json --kernel '" + manifest_.kernels[1].name + "' " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["manifest"]["kernels"].size(), 1u);
  EXPECT_EQ(j["manifest"]["kernels"][0]["name"], manifest_.kernels[1].name);
  ASSERT_EQ(j["manifest"]["images"].size(), 1u);  // only the PTX image holds reduce
  EXPECT_EQ(j["manifest"]["images"][0]["target"], "ptx");

  r = dump("--json --target spirv " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  j = json::parse(r.out);
  ASSERT_EQ(j["manifest"]["images"].size(), 1u);
  EXPECT_EQ(j["manifest"]["images"][0]["index"], 1);
  ASSERT_EQ(j["manifest"]["kernels"].size(), 1u);
  EXPECT_EQ(j["manifest"]["kernels"][0]["name"], "saxpy");

  r = dump("--kernel no_such_kernel " + quoted(file_));
  EXPECT_EQ(r.status, 1);
  expect_contains(r.err, "quiver-dump: ");
  expect_contains(r.err, "no kernel named 'no_such_kernel'");
  r = dump("--target hsaco " + quoted(file_));
  EXPECT_EQ(r.status, 1);
  expect_contains(r.err, "no hsaco image");
  r = dump("--target bogus " + quoted(file_));
  EXPECT_NE(r.status, 0);
  expect_contains(r.err, "unknown target 'bogus'");
}

TEST_F(QuiverDump, DisassemblesPtxAndSpirv) {
  Result r = dump("--target ptx --disasm " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "=== image 0: ptx sm_80 ===");
  expect_contains(r.out, ".visible .entry qv_k0_saxpy(");
  expect_contains(r.out, ".reqntid 256, 1, 1");

  r = dump("--target spirv --disasm " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "=== image 1: spirv vulkan1.2 ===");
  expect_contains(r.out, "OpEntryPoint GLCompute %qv_k0_saxpy \"qv_k0_saxpy\"");
  expect_contains(r.out, "OpExecutionMode %qv_k0_saxpy LocalSize 256 1 1");

  r = dump("--json --target spirv --disasm " + quoted(file_));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  expect_contains(j["manifest"]["images"][0]["disassembly"].get<std::string>(), "OpCapability Shader");
}

TEST_F(QuiverDump, DisassemblesCpuImagesWithObjdumpWhenPresent) {
  bool have_objdump = fs::exists("/usr/bin/llvm-objdump-19") || fs::exists("/usr/lib/llvm-19/bin/llvm-objdump");
  Result r = dump("--target cpu --disasm " + quoted(file_), "PATH=/usr/bin:/usr/lib/llvm-19/bin");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "=== image 2: cpu x86_64 ===");
  if (have_objdump) expect_contains(r.out, "<qv_k0_saxpy>:");
  // Without any objdump on PATH the tool says so instead of failing.
  r = dump("--target cpu --disasm " + quoted(file_), "PATH=" + dir_.string());
  ASSERT_EQ(r.status, 0) << r.err;
  expect_contains(r.out, "(no disassembly) CPU disassembly is not available");
}

TEST_F(QuiverDump, CorruptFilesExitWithOneAndAMessage) {
  Bytes bad = bytes_;
  bad[70] ^= std::byte{0x04};  // inside the manifest
  write_bytes(dir_ / "bad_manifest.qfb", bad);
  Result r = dump(quoted(dir_ / "bad_manifest.qfb"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("quiver-dump: ", 0), 0u) << r.err;
  expect_contains(r.err, (dir_ / "bad_manifest.qfb").string());
  expect_contains(r.err, "header.manifest_checksum");

  qf::FatBinary fb = qf::FatBinary::parse(bytes_, "x");
  bad = bytes_;
  bad[fb.manifest().images[1].offset + 5] ^= std::byte{0x10};  // inside the SPIR-V image
  write_bytes(dir_ / "bad_image.qfb", bad);
  r = dump(quoted(dir_ / "bad_image.qfb"));
  EXPECT_EQ(r.status, 1);
  expect_contains(r.err, "images[1].checksum");
  // An image that is not selected is not read, so the rest of the file can still be shown.
  r = dump("--target ptx " + quoted(dir_ / "bad_image.qfb"));
  EXPECT_EQ(r.status, 0) << r.err;

  bad.assign(bytes_.begin(), bytes_.begin() + 100);
  write_bytes(dir_ / "short.qfb", bad);
  r = dump(quoted(dir_ / "short.qfb"));
  EXPECT_EQ(r.status, 1);
  expect_contains(r.err, "header.file_size");

  r = dump(quoted(dir_ / "missing.qfb"));
  EXPECT_EQ(r.status, 1);
  expect_contains(r.err, "quiver-dump: " + (dir_ / "missing.qfb").string() + ": cannot open");
}
