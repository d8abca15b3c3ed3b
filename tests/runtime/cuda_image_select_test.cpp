// Which image the CUDA backend loads for a device (runtime/backends/cuda/cuda_image_select.h).
// Pure logic, so it runs everywhere; the expectations restate NVIDIA's compatibility rules
// independently of the implementation.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_image_select.h"

namespace {

using quiver::backend::cuda::check_cubin;
using quiver::backend::cuda::describe_images;
using quiver::backend::cuda::parse_sm_arch;
using quiver::backend::cuda::rank_cuda_images;
using quiver::backend::cuda::use_programmatic_launch;
using quiver::format::Target;

quiver::format::Manifest with_images(std::vector<std::pair<Target, std::string>> images) {
  quiver::format::Manifest m;
  for (auto& [target, arch] : images) {
    quiver::format::Image im;
    im.target = target;
    im.arch = arch;
    m.images.push_back(im);
  }
  return m;
}

std::vector<std::string> ranked(const quiver::format::Manifest& m, int major, int minor) {
  std::vector<std::string> out;
  for (const auto& c : rank_cuda_images(m, major, minor)) out.push_back(c.description);
  return out;
}

using Names = std::vector<std::string>;

TEST(CudaImageSelect, ParsesSmArchitectures) {
  auto a = parse_sm_arch("sm_90");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->major, 9);
  EXPECT_EQ(a->minor, 0);
  EXPECT_EQ(a->variant, 0);
  a = parse_sm_arch("sm_90a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->variant, 'a');
  a = parse_sm_arch("sm_120f");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->major, 12);
  EXPECT_EQ(a->minor, 0);
  EXPECT_EQ(a->variant, 'f');
  a = parse_sm_arch("sm_86");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->major, 8);
  EXPECT_EQ(a->minor, 6);
  for (const char* bad : {"sm_", "sm_9", "sm_9x", "sm_1000", "gfx90a", "compute_90", "sm_a", "sm_05", ""})
    EXPECT_FALSE(parse_sm_arch(bad)) << bad;
}

TEST(CudaImageSelect, H100PrefersExactCubinThenPtx) {
  auto m = with_images({{Target::PTX, "sm_80"},
                        {Target::CUBIN, "sm_80"},   // other major: never loads on 9.0
                        {Target::CUBIN, "sm_90"},
                        {Target::SPIRV, "vulkan1.2"},
                        {Target::CUBIN, "sm_90a"},
                        {Target::PTX, "sm_90"}});
  EXPECT_EQ(ranked(m, 9, 0), (Names{"cubin sm_90a", "cubin sm_90", "ptx sm_90 (JIT)", "ptx sm_80 (JIT)"}));
}

TEST(CudaImageSelect, OlderMinorCubinRunsButNotNewer) {
  auto m = with_images({{Target::CUBIN, "sm_80"}, {Target::CUBIN, "sm_89"}, {Target::PTX, "sm_80"}});
  EXPECT_EQ(ranked(m, 8, 6), (Names{"cubin sm_80", "ptx sm_80 (JIT)"}));
  EXPECT_EQ(ranked(m, 8, 9), (Names{"cubin sm_89", "cubin sm_80", "ptx sm_80 (JIT)"}));
  EXPECT_EQ(ranked(m, 8, 0), (Names{"cubin sm_80", "ptx sm_80 (JIT)"}));
  // A newer major: only PTX is forward compatible.
  EXPECT_EQ(ranked(m, 9, 0), (Names{"ptx sm_80 (JIT)"}));
}

TEST(CudaImageSelect, ArchSpecificAndFamilyVariants) {
  auto a = with_images({{Target::CUBIN, "sm_90a"}, {Target::PTX, "sm_90a"}});
  EXPECT_EQ(ranked(a, 9, 0), (Names{"cubin sm_90a", "ptx sm_90a (JIT)"}));
  EXPECT_TRUE(ranked(a, 10, 0).empty());   // 'a' code runs on its exact SM only

  auto f = with_images({{Target::CUBIN, "sm_100f"}, {Target::PTX, "sm_100f"}, {Target::CUBIN, "sm_100a"}});
  EXPECT_EQ(ranked(f, 10, 3), (Names{"cubin sm_100f", "ptx sm_100f (JIT)"}));
  EXPECT_EQ(ranked(f, 10, 0), (Names{"cubin sm_100a", "cubin sm_100f", "ptx sm_100f (JIT)"}));
  EXPECT_TRUE(ranked(f, 12, 0).empty());
}

TEST(CudaImageSelect, NothingFitsOrUnreadableArch) {
  auto m = with_images({{Target::PTX, "sm_100"}, {Target::CUBIN, "sm_100"}, {Target::CPU, "x86_64"},
                        {Target::PTX, "compute_80"}});
  EXPECT_TRUE(ranked(m, 9, 0).empty());
  EXPECT_EQ(describe_images(m), "ptx sm_100, cubin sm_100, cpu x86_64, ptx compute_80");
  EXPECT_EQ(describe_images(quiver::format::Manifest{}), "no images");
}

TEST(CudaImageSelect, ReportsIndicesIntoTheManifest) {
  auto m = with_images({{Target::CPU, "x86_64"}, {Target::PTX, "sm_75"}, {Target::CUBIN, "sm_90"}});
  auto choices = rank_cuda_images(m, 9, 0);
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].index, 2u);
  EXPECT_FALSE(choices[0].jit);
  EXPECT_EQ(choices[1].index, 1u);
  EXPECT_TRUE(choices[1].jit);
}

// A 64-bit little-endian EM_CUDA ELF header with `sections` section headers right after it,
// each describing `section_bytes` of content at `section_offset`.
std::vector<std::byte> cuda_elf(uint16_t sections, uint64_t section_offset, uint64_t section_bytes) {
  std::vector<std::byte> out(64 + 64 * size_t{sections} + 32, std::byte{0});
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[at + i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(0, 0x464c457f, 4);   // "\x7fELF"
  put(4, 2, 1);            // ELFCLASS64
  put(5, 1, 1);            // little-endian
  put(6, 1, 1);
  put(16, 2, 2);           // ET_EXEC
  put(18, 190, 2);         // EM_CUDA
  put(20, 1, 4);
  put(40, sections ? 64 : 0, 8);   // e_shoff
  put(52, 64, 2);
  put(58, 64, 2);          // e_shentsize
  put(60, sections, 2);    // e_shnum
  for (uint16_t i = 0; i < sections; ++i) {
    const size_t sh = 64 + 64 * size_t{i};
    put(sh + 4, 1, 4);     // SHT_PROGBITS
    put(sh + 24, section_offset, 8);
    put(sh + 32, section_bytes, 8);
  }
  return out;
}

TEST(CudaCubinCheck, AcceptsWellFormedCudaElf) {
  EXPECT_EQ(check_cubin(cuda_elf(0, 0, 0)), "");
  auto elf = cuda_elf(2, 64, 128);   // sections inside the 224-byte image
  EXPECT_EQ(check_cubin(elf), "");
}

TEST(CudaCubinCheck, RejectsWhatTheDriverWouldReadOutOfBounds) {
  EXPECT_NE(check_cubin(std::vector<std::byte>(256, std::byte{0x42})), "");   // not ELF (would be taken as PTX)
  EXPECT_NE(check_cubin(std::vector<std::byte>(10, std::byte{0x7f})), "");    // shorter than a header
  auto elf = cuda_elf(0, 0, 0);
  elf[4] = std::byte{1};   // 32-bit
  EXPECT_NE(check_cubin(elf), "");
  elf = cuda_elf(0, 0, 0);
  elf[18] = std::byte{62};   // EM_X86_64
  EXPECT_NE(check_cubin(elf), "");
  EXPECT_NE(check_cubin(cuda_elf(1, 100, 1000)), "");   // section content past the end
  EXPECT_NE(check_cubin(cuda_elf(1, ~uint64_t{0} - 4, 8)), "");   // offset + size overflows
  elf = cuda_elf(2, 64, 16);
  elf[60] = std::byte{200};   // more section headers than the image holds
  EXPECT_NE(check_cubin(elf), "");
  // Random corruption of a good header never crashes and is either accepted or explained.
  std::mt19937 rng{std::random_device{}()};
  for (int trial = 0; trial < 2000; ++trial) {
    auto bad = cuda_elf(2, 64, 128);
    bad[std::uniform_int_distribution<size_t>(0, 63)(rng)] = std::byte(static_cast<uint8_t>(rng()));
    bad.resize(std::uniform_int_distribution<size_t>(0, bad.size())(rng));
    (void)check_cubin(bad);
  }
}

// docs/abi.md "Overlapped launches": only a marked image, on a driver with cuLaunchKernelEx and
// a device of compute capability 9.0 or later, unless QUIVER_CUDA_PROGRAMMATIC_LAUNCH is "0".
TEST(CudaImageSelect, ProgrammaticLaunchNeedsImageDriverDeviceAndNoOptOut) {
  quiver::format::Image marked, plain;
  marked.target = plain.target = Target::CUBIN;
  marked.arch = plain.arch = "sm_90a";
  marked.programmatic_launch = true;
  EXPECT_TRUE(use_programmatic_launch(marked, true, 9, nullptr));
  EXPECT_TRUE(use_programmatic_launch(marked, true, 10, "1"));
  EXPECT_TRUE(use_programmatic_launch(marked, true, 9, ""));
  EXPECT_FALSE(use_programmatic_launch(marked, true, 9, "0"));    // the opt-out
  EXPECT_FALSE(use_programmatic_launch(marked, false, 9, nullptr));   // a driver without cuLaunchKernelEx
  EXPECT_FALSE(use_programmatic_launch(marked, true, 8, nullptr));    // before Hopper: no griddepcontrol
  EXPECT_FALSE(use_programmatic_launch(plain, true, 9, nullptr));     // an image whose kernels do not wait
}

}  // namespace
