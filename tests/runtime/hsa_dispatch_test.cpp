// The HIP backend's pure logic (runtime/backends/hsa/hsa_dispatch.h), which runs without an AMD
// GPU: the kernarg layout and packing of docs/abi.md "HSACO", the AQL dispatch packet, and the
// choice of code object for an agent. Expected values are written out by hand from the AMDGPU
// calling convention and the HSA specification, not computed with the code under test.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "hsa_dispatch.h"

namespace quiver::backend::hsa {
namespace {

using format::Param;
using format::ScalarType;

Param buffer(ScalarType t, uint32_t vec = 1) { return Param{"b", t, vec, true, format::Access::ReadWrite}; }
Param scalar(ScalarType t) { return Param{"s", t, 1, false, format::Access::Read}; }

TEST(HsaKernarg, LayoutPlacesEachArgumentAtItsNaturalAlignment) {
  // buffer, half, bool, int64, float, uint8-element buffer, int32
  std::vector<Param> params = {buffer(ScalarType::F32), scalar(ScalarType::F16), scalar(ScalarType::Bool),
                               scalar(ScalarType::I64), scalar(ScalarType::F32), buffer(ScalarType::U8, 4),
                               scalar(ScalarType::I32)};
  KernargLayout l = kernarg_layout(params);
  EXPECT_EQ(l.offsets, (std::vector<uint32_t>{0, 8, 12, 16, 24, 32, 40}));
  EXPECT_EQ(l.sizes, (std::vector<uint32_t>{8, 2, 4, 8, 4, 8, 4}));
  EXPECT_EQ(l.size, 44u);
  EXPECT_EQ(l.alignment, 8u);
}

TEST(HsaKernarg, ScalarOnlyAndEmptyKernels) {
  KernargLayout l = kernarg_layout(std::vector<Param>{scalar(ScalarType::F16), scalar(ScalarType::F16),
                                                      scalar(ScalarType::U32)});
  EXPECT_EQ(l.offsets, (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(l.size, 8u);
  EXPECT_EQ(l.alignment, 4u);
  KernargLayout none = kernarg_layout({});
  EXPECT_EQ(none.size, 0u);
  EXPECT_TRUE(pack_kernargs(none, {}).empty());
}

TEST(HsaKernarg, PackingPutsRandomValuesAtTheirOffsetsAndZeroesThePadding) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<Param> params = {scalar(ScalarType::F16), buffer(ScalarType::F32), scalar(ScalarType::I32),
                               scalar(ScalarType::U64)};
  KernargLayout l = kernarg_layout(params);
  ASSERT_EQ(l.offsets, (std::vector<uint32_t>{0, 8, 16, 24}));
  uint16_t h = static_cast<uint16_t>(rng());
  uint64_t address = rng();
  int32_t i = static_cast<int32_t>(rng());
  uint64_t u = rng();
  std::vector<KernargValue> values = {{&h, 2}, {&address, 8}, {&i, 4}, {&u, 8}};
  std::vector<std::byte> bytes = pack_kernargs(l, values);
  ASSERT_EQ(bytes.size(), 32u);
  uint16_t h2;
  uint64_t a2, u2;
  int32_t i2;
  std::memcpy(&h2, bytes.data() + 0, 2);
  std::memcpy(&a2, bytes.data() + 8, 8);
  std::memcpy(&i2, bytes.data() + 16, 4);
  std::memcpy(&u2, bytes.data() + 24, 8);
  EXPECT_EQ(h2, h);
  EXPECT_EQ(a2, address);
  EXPECT_EQ(i2, i);
  EXPECT_EQ(u2, u);
  for (size_t p : {2, 3, 4, 5, 6, 7, 20, 21, 22, 23}) EXPECT_EQ(bytes[p], std::byte{0}) << "padding byte " << p;
}

TEST(HsaKernarg, WrongValueCountOrSizeIsAnInvalidArgument) {
  KernargLayout l = kernarg_layout(std::vector<Param>{buffer(ScalarType::F32), scalar(ScalarType::I32)});
  uint64_t address = 0;
  int32_t i = 0;
  int64_t wide = 0;
  std::vector<KernargValue> too_few = {{&address, 8}};
  std::vector<KernargValue> wrong_size = {{&address, 8}, {&wide, 8}};
  std::vector<KernargValue> null_value = {{&address, 8}, {nullptr, 4}};
  for (const auto* values : {&too_few, &wrong_size, &null_value}) {
    try {
      pack_kernargs(l, *values);
      ADD_FAILURE() << "accepted " << values->size() << " values";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    }
  }
  std::vector<KernargValue> ok = {{&address, 8}, {&i, 4}};
  EXPECT_EQ(pack_kernargs(l, ok).size(), 12u);
}

TEST(HsaDispatch, PacketCarriesGridInWorkItemsAndTheSegmentSizes) {
  int marker = 0;
  hsa_kernel_dispatch_packet_t p =
      make_dispatch_packet({64, 4, 1}, Grid{1000, 3, 2}, 0xabcdef00, &marker, 4096, 16, hsa_signal_t{77});
  EXPECT_EQ(p.workgroup_size_x, 64);
  EXPECT_EQ(p.workgroup_size_y, 4);
  EXPECT_EQ(p.workgroup_size_z, 1);
  EXPECT_EQ(p.grid_size_x, 64000u);
  EXPECT_EQ(p.grid_size_y, 12u);
  EXPECT_EQ(p.grid_size_z, 2u);
  EXPECT_EQ(p.group_segment_size, 4096u);
  EXPECT_EQ(p.private_segment_size, 16u);
  EXPECT_EQ(p.kernel_object, 0xabcdef00u);
  EXPECT_EQ(p.kernarg_address, &marker);
  EXPECT_EQ(p.completion_signal.handle, 77u);
  EXPECT_EQ(p.reserved0, 0);
  EXPECT_EQ(p.reserved2, 0u);
  // The 64-byte AQL layout: grid_size_x at byte 12, kernel_object at 32, completion_signal at 56.
  const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
  uint32_t grid_x;
  uint64_t object, signal;
  std::memcpy(&grid_x, bytes + 12, 4);
  std::memcpy(&object, bytes + 32, 8);
  std::memcpy(&signal, bytes + 56, 8);
  EXPECT_EQ(grid_x, 64000u);
  EXPECT_EQ(object, 0xabcdef00u);
  EXPECT_EQ(signal, 77u);
}

TEST(HsaDispatch, GridsBeyond32BitWorkItemsAreRefused) {
  EXPECT_THROW(make_dispatch_packet({1024, 1, 1}, Grid{1u << 22, 1, 1}, 1, nullptr, 0, 0, {0}), Error);
  EXPECT_NO_THROW(make_dispatch_packet({1024, 1, 1}, Grid{(1u << 22) - 1, 1, 1}, 1, nullptr, 0, 0, {0}));
  EXPECT_THROW(make_dispatch_packet({1, 1, 1}, Grid{0, 1, 1}, 1, nullptr, 0, 0, {0}), Error);
}

TEST(HsaDispatch, HeaderIsAKernelDispatchWithBarrierAndSystemFences) {
  uint32_t word = dispatch_header_and_setup();
  uint16_t header = word & 0xffff, setup = word >> 16;
  EXPECT_EQ(header & 0xff, 2) << "HSA_PACKET_TYPE_KERNEL_DISPATCH";
  EXPECT_EQ((header >> 8) & 1, 1) << "barrier bit";
  EXPECT_EQ((header >> 9) & 3, 2) << "acquire fence: system scope";
  EXPECT_EQ((header >> 11) & 3, 2) << "release fence: system scope";
  EXPECT_EQ(setup & 3, 3) << "three dimensions";
}

TEST(HsaImageChoice, ProcessorNamesAndExactMatches) {
  EXPECT_EQ(processor_of("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(processor_of("gfx1100"), "gfx1100");
  EXPECT_EQ(processor_of("gfx942:xnack+"), "gfx942");
  format::Manifest m;
  m.images.push_back({format::Target::SPIRV, "vulkan1.2"});
  m.images.push_back({format::Target::HSACO, "gfx90a"});
  m.images.push_back({format::Target::HSACO, "gfx1100"});
  EXPECT_EQ(choose_hsaco_image(m, "gfx1100"), std::optional<size_t>(2));
  EXPECT_EQ(choose_hsaco_image(m, "gfx90a"), std::optional<size_t>(1));
  // Code objects do not run on a sibling processor.
  EXPECT_EQ(choose_hsaco_image(m, "gfx1101"), std::nullopt);
  EXPECT_EQ(choose_hsaco_image(m, "vulkan1.2"), std::nullopt);
}

}  // namespace
}  // namespace quiver::backend::hsa
