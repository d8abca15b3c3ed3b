// The HIP backend's kernarg packing against real code objects: for every kernel of every HSACO
// image of the kernel suite, random argument values are packed with pack_kernargs and read back
// at the offsets and sizes the code object's own metadata declares (llvm-readelf --notes), and
// the segment size must equal the metadata's .kernarg_segment_size — which is what the GPU reads.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "format/fatbin.h"
#include "hsa_dispatch.h"
#include "hsaco_notes.h"

namespace quiver::backend::hsa {
namespace {

TEST(HsaKernargMetadata, PackedArgumentsSitWhereEachCodeObjectReadsThem) {
  std::optional<std::string> readelf = test::find_llvm_tool("llvm-readelf");
  ASSERT_TRUE(readelf) << "llvm-readelf (LLVM 19) is not installed";
  auto fb = format::FatBinary::read_file(QV_TEST_KERNELS_QFB);
  const format::Manifest& manifest = fb.manifest();
  std::mt19937_64 rng(std::random_device{}());
  size_t images = 0, kernels = 0;
  for (size_t i = 0; i < manifest.images.size(); ++i) {
    if (manifest.images[i].target != format::Target::HSACO) continue;
    ++images;
    test::HsacoMeta meta;
    std::string error;
    ASSERT_TRUE(test::read_hsaco_metadata(*readelf, fb.image_data(i), meta, error)) << error;
    for (const test::HsacoKernelMeta& km : meta.kernels) {
      const format::Kernel* kernel = nullptr;
      for (const format::Kernel& k : manifest.kernels)
        if (k.symbol == km.name) kernel = &k;
      ASSERT_NE(kernel, nullptr) << km.name;
      ++kernels;
      const std::string where = manifest.images[i].arch + " " + kernel->name;
      KernargLayout layout = kernarg_layout(kernel->params);
      ASSERT_EQ(layout.size, km.kernarg_segment_size) << where;
      ASSERT_EQ(km.args.size(), kernel->params.size()) << where;
      // Fresh random bytes for every argument, packed, then read at the metadata's places.
      std::vector<std::vector<unsigned char>> values(kernel->params.size());
      std::vector<KernargValue> packed_values;
      for (size_t a = 0; a < values.size(); ++a) {
        values[a].resize(layout.sizes[a]);
        for (unsigned char& b : values[a]) b = static_cast<unsigned char>(rng());
        packed_values.push_back({values[a].data(), static_cast<uint32_t>(values[a].size())});
      }
      std::vector<std::byte> bytes = pack_kernargs(layout, packed_values);
      ASSERT_EQ(bytes.size(), km.kernarg_segment_size) << where;
      for (size_t a = 0; a < values.size(); ++a) {
        const test::HsacoArg& arg = km.args[a];
        ASSERT_EQ(arg.size, values[a].size()) << where << " argument " << a;
        ASSERT_LE(arg.offset + arg.size, bytes.size()) << where << " argument " << a;
        EXPECT_EQ(std::memcmp(bytes.data() + arg.offset, values[a].data(), arg.size), 0)
            << where << ": argument " << a << " is not at metadata offset " << arg.offset;
      }
    }
  }
  EXPECT_GE(images, 4u) << "the kernel suite should have an HSACO image per default processor";
  EXPECT_GT(kernels, 0u);
}

}  // namespace
}  // namespace quiver::backend::hsa
