// Interop on the CPU backend: native handles, DLPack export (every element type), DLPack import
// without copying (kernels write straight into the foreign memory), the checks on imported
// tensors (each failure leaves the tensor with its owner), round trips through quiver itself,
// and the deleter running exactly once, whatever order the handles are dropped in; Buffer::as,
// the same memory seen as another element type.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "quiver/quiver.h"
#include "quiver/runtime.h"
#include "scoped_env.h"
#include "test_fatbin.h"

namespace {

using quiver::Buffer;
using quiver::Device;
using quiver::ErrorCode;
using quiver::Grid;
using quiver::Module;

const std::vector<std::byte>& fatbin() {
  static const std::vector<std::byte> bytes = quiver::test::make_test_fatbin();
  return bytes;
}

std::vector<float> random_floats(size_t n) {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A tensor owned by the test, as another framework would hand one over: 64-byte aligned host
// storage of `capacity` bytes, and a deleter that counts its calls and frees everything.
struct TestTensor {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
  void* storage = nullptr;
  int* calls = nullptr;
};

void count_and_free(DLManagedTensor* self) {
  auto* t = static_cast<TestTensor*>(self->manager_ctx);
  ++*t->calls;
  std::free(t->storage);
  delete t;
}

DLManagedTensor* host_tensor(int& calls, DLDataType dtype, std::vector<int64_t> shape, size_t capacity,
                             std::vector<int64_t> strides = {}, uint64_t byte_offset = 0) {
  auto* t = new TestTensor;
  t->shape = std::move(shape);
  t->strides = std::move(strides);
  t->storage = std::aligned_alloc(64, (capacity + 63) / 64 * 64 + 64);
  t->calls = &calls;
  DLTensor& d = t->managed.dl_tensor;
  d.data = t->storage;
  d.device = DLDevice{kDLCPU, 0};
  d.ndim = static_cast<int>(t->shape.size());
  d.dtype = dtype;
  d.shape = t->shape.empty() ? nullptr : t->shape.data();
  d.strides = t->strides.empty() ? nullptr : t->strides.data();
  d.byte_offset = byte_offset;
  t->managed.manager_ctx = t;
  t->managed.deleter = &count_and_free;
  return &t->managed;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

template <typename T>
T* data_of(DLManagedTensor* t) {
  return reinterpret_cast<T*>(static_cast<char*>(t->dl_tensor.data) + t->dl_tensor.byte_offset);
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

class CpuInterop : public ::testing::Test {
 protected:
  Device dev = Device::open("cpu");
  Module mod = dev.load(fatbin(), "test.qfb");
};

TEST_F(CpuInterop, NativeHandleIsTheHostAddress) {
  const std::vector<float> x = random_floats(1000);
  Buffer<float> a = dev.alloc<float>(1000), b = dev.alloc<float>(1000);
  a.upload(x);
  ASSERT_NE(a.native_handle(), 0u);
  EXPECT_NE(a.native_handle(), b.native_handle());
  const float* host = reinterpret_cast<const float*>(static_cast<uintptr_t>(a.native_handle()));
  EXPECT_EQ(std::vector<float>(host, host + 1000), x);
  EXPECT_EQ(dev.native_stream(), nullptr);   // launches finish inside launch(): no queue
  EXPECT_EQ(dev.native_device(), nullptr);
  try {
    (void)Buffer<float>().native_handle();
    FAIL() << "an empty Buffer has a native handle";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

// to_dlpack describes every element type the way DLPack spells it.
template <typename T>
class CpuDlpackExport : public ::testing::Test {};
using ElementTypes = ::testing::Types<bool, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t,
                                      quiver::half, quiver::bf16, float, double>;
TYPED_TEST_SUITE(CpuDlpackExport, ElementTypes);

template <typename T>
DLDataType expected_dtype() {
  using quiver::bf16;
  using quiver::half;
  const uint8_t bits = sizeof(T) * 8;
  if constexpr (std::is_same_v<T, bool>) return {6, 8, 1};   // kDLBool (DLPack 0.8)
  else if constexpr (std::is_same_v<T, half>) return {kDLFloat, 16, 1};
  else if constexpr (std::is_same_v<T, bf16>) return {kDLBfloat, 16, 1};
  else if constexpr (std::is_floating_point_v<T>) return {kDLFloat, bits, 1};
  else if constexpr (std::is_signed_v<T>) return {kDLInt, bits, 1};
  else return {kDLUInt, bits, 1};
}

TYPED_TEST(CpuDlpackExport, DescribesTheBuffer) {
  Device dev = Device::open("cpu");
  Buffer<TypeParam> b = dev.alloc<TypeParam>(37);
  DLManagedTensor* t = b.to_dlpack();
  ASSERT_NE(t, nullptr);
  const DLTensor& d = t->dl_tensor;
  EXPECT_EQ(d.device.device_type, kDLCPU);
  EXPECT_EQ(d.device.device_id, 0);
  EXPECT_EQ(d.ndim, 1);
  ASSERT_NE(d.shape, nullptr);
  EXPECT_EQ(d.shape[0], 37);
  EXPECT_EQ(d.strides, nullptr);
  EXPECT_EQ(d.byte_offset, 0u);
  const DLDataType want = expected_dtype<TypeParam>();
  EXPECT_EQ(d.dtype.code, want.code);
  EXPECT_EQ(d.dtype.bits, want.bits);
  EXPECT_EQ(d.dtype.lanes, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data), b.native_handle());
  ASSERT_NE(t->deleter, nullptr);
  // Importing it back gives a Buffer of the same type and size over the same memory.
  Buffer<TypeParam> back = dev.from_dlpack<TypeParam>(t);
  EXPECT_EQ(back.size(), 37u);
  EXPECT_EQ(back.native_handle(), b.native_handle());
}

// The tensor keeps the memory alive after the Buffer and the Device are gone.
TEST(CpuDlpack, ExportOutlivesBufferAndDevice) {
  const std::vector<float> x = random_floats(513);
  DLManagedTensor* t = nullptr;
  {
    Device dev = Device::open("cpu");
    Buffer<float> b = dev.alloc<float>(513);
    b.upload(x);
    t = b.to_dlpack();
  }
  float* data = data_of<float>(t);
  EXPECT_EQ(std::vector<float>(data, data + 513), x);
  data[512] = 1.5f;   // still writable (AddressSanitizer would report a use after free)
  t->deleter(t);
}

TEST_F(CpuInterop, ImportedMemoryIsUsedInPlace) {
  const uint32_t n = 3000;
  int x_calls = 0, y_calls = 0;
  DLManagedTensor* tx = host_tensor(x_calls, kF32, {n}, n * 4);
  DLManagedTensor* ty = host_tensor(y_calls, kF32, {n + 16}, (n + 16) * 4);
  const std::vector<float> x = random_floats(n), y = random_floats(n);
  std::memcpy(data_of<float>(tx), x.data(), n * 4);
  std::memcpy(data_of<float>(ty), y.data(), n * 4);
  for (uint32_t i = n; i < n + 16; ++i) data_of<float>(ty)[i] = std::numeric_limits<float>::quiet_NaN();
  {
    Buffer<float> bx = dev.from_dlpack<float>(tx);
    Buffer<float> by = dev.from_dlpack<float>(ty);
    EXPECT_EQ(bx.size(), n);
    EXPECT_EQ(by.size(), n + 16);
    EXPECT_EQ(bx.native_handle(), reinterpret_cast<uintptr_t>(data_of<float>(tx)));
    const float a = -2.25f;
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, by, a, n);
    dev.synchronize();
    const float* out = data_of<float>(ty);   // the kernel wrote the foreign memory itself
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a * x[i] + y[i]) << i;
    for (uint32_t i = n; i < n + 16; ++i) ASSERT_TRUE(std::isnan(out[i])) << i;
    std::vector<float> got(n);
    by.download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], out[i]);
    EXPECT_EQ(x_calls, 0);
    EXPECT_EQ(y_calls, 0);
  }
  EXPECT_EQ(x_calls, 1);
  EXPECT_EQ(y_calls, 1);
}

TEST_F(CpuInterop, DeleterRunsOnceAfterTheLastCopy) {
  int calls = 0;
  DLManagedTensor* t = host_tensor(calls, kF32, {256}, 1024);
  std::optional<Buffer<float>> first(dev.from_dlpack<float>(t));
  std::vector<Buffer<float>> copies(3, *first);
  Buffer<float> x = dev.alloc<float>(256);
  x.upload(random_floats(256));
  mod.kernel("saxpy").launch(Grid{1}, x, copies[1], 1.0f, uint32_t{256});
  first.reset();
  copies.pop_back();
  copies.pop_back();
  EXPECT_EQ(calls, 0);
  copies.clear();
  EXPECT_EQ(calls, 1);
}

// Each malformed or foreign tensor is refused with a message naming the fault, and the caller
// keeps it (the deleter has not run; the test then calls it).
TEST_F(CpuInterop, ImportChecksNameTheFaultAndLeaveOwnership) {
  struct Case {
    std::string name;
    std::function<void(DLTensor&)> damage;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"half for float", [](DLTensor& d) { d.dtype = {kDLFloat, 16, 1}; }, "dtype kDLFloat 16 bits is half, but the Buffer is of float"},
      {"vector lanes", [](DLTensor& d) { d.dtype.lanes = 4; }, "kDLFloat 32 bits x 4 lanes has no quiver element type"},
      {"complex", [](DLTensor& d) { d.dtype = {kDLComplex, 64, 1}; }, "kDLComplex 64 bits has no quiver element type"},
      {"cuda memory", [](DLTensor& d) { d.device = {kDLCUDA, 0}; }, "on kDLCUDA:0; the cpu backend takes kDLCPU or kDLCUDAHost"},
      {"cpu id 1", [](DLTensor& d) { d.device = {kDLCPU, 1}; }, "DLPack numbers host memory kDLCPU:0"},
      {"vulkan memory", [](DLTensor& d) { d.device = {kDLVulkan, 0}; }, "on kDLVulkan:0"},
      {"negative ndim", [](DLTensor& d) { d.ndim = -1; }, "ndim is -1"},
      {"null shape", [](DLTensor& d) { d.shape = nullptr; }, "shape is NULL for ndim 2"},
      {"negative extent", [](DLTensor& d) { d.shape[0] = -3; }, "shape[0] is -3"},
      {"transposed", [](DLTensor& d) { static int64_t s[] = {1, 4}; d.strides = s; },
       "not contiguous: dimension 1 has stride 4 elements where a compact row-major layout has 1"},
      {"padded rows", [](DLTensor& d) { static int64_t s[] = {5, 1}; d.strides = s; },
       "dimension 0 has stride 5 elements where a compact row-major layout has 4"},
      {"null data", [](DLTensor& d) { d.data = nullptr; }, "data is NULL for a tensor of 12 elements"},
      {"misaligned", [](DLTensor& d) { d.byte_offset = 2; }, "is not aligned to its size (4 bytes)"},
  };
  for (const Case& c : cases) {
    int calls = 0;
    DLManagedTensor* t = host_tensor(calls, kF32, {3, 4}, 64);
    c.damage(t->dl_tensor);
    try {
      dev.from_dlpack<float>(t);
      ADD_FAILURE() << c.name << ": imported";
    } catch (const quiver::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << c.name;
      EXPECT_CONTAINS(e.what(), "from_dlpack on cpu:0: ");
      EXPECT_CONTAINS(e.what(), c.message);
    }
    EXPECT_EQ(calls, 0) << c.name << ": the deleter ran although the import failed";
    t->deleter(t);
    EXPECT_EQ(calls, 1);
  }
  try {
    dev.from_dlpack<float>(nullptr);
    ADD_FAILURE() << "a NULL tensor was imported";
  } catch (const quiver::Error& e) {
    EXPECT_CONTAINS(e.what(), "the DLManagedTensor is NULL");
  }
}

TEST_F(CpuInterop, ImportFlattensCompactTensorsAndHonoursTheOffset) {
  int calls = 0;
  {
    // 2x3x4, explicit compact strides, 16 bytes in.
    DLManagedTensor* t = host_tensor(calls, kF32, {2, 3, 4}, 24 * 4 + 16, {12, 4, 1}, 16);
    for (int i = 0; i < 24; ++i) data_of<float>(t)[i] = static_cast<float>(i * 3 + 1);
    Buffer<float> b = dev.from_dlpack<float>(t);
    ASSERT_EQ(b.size(), 24u);
    EXPECT_EQ(b.native_handle(), reinterpret_cast<uintptr_t>(t->dl_tensor.data) + 16);
    std::vector<float> got(24);
    b.download(got);
    for (int i = 0; i < 24; ++i) ASSERT_EQ(got[i], static_cast<float>(i * 3 + 1));
  }
  {
    // Extents of 1 may carry any stride; a 0-d tensor is one element; an empty one may have no data.
    DLManagedTensor* t = host_tensor(calls, kF32, {2, 1, 4}, 32, {4, 999, 1});
    EXPECT_EQ(dev.from_dlpack<float>(t).size(), 8u);
    DLManagedTensor* scalar = host_tensor(calls, kF32, {}, 4);
    EXPECT_EQ(dev.from_dlpack<float>(scalar).size(), 1u);
    DLManagedTensor* empty = host_tensor(calls, kF32, {0, 5}, 0);
    empty->dl_tensor.data = nullptr;
    EXPECT_EQ(dev.from_dlpack<float>(empty).size(), 0u);
  }
  EXPECT_EQ(calls, 4);
}

// vec<float, 4>* parameters need 16-byte alignment: an import that only has 4 is refused at
// launch, an aligned one runs.
TEST_F(CpuInterop, VectorParametersNeedAlignedImports) {
  int calls = 0;
  DLManagedTensor* unaligned = host_tensor(calls, kF32, {64}, 64 * 4 + 16, {}, 4);
  DLManagedTensor* aligned = host_tensor(calls, kF32, {64}, 64 * 4, {}, 16);
  const std::vector<float> a = random_floats(64), b = random_floats(64);
  std::memcpy(data_of<float>(aligned), b.data(), 64 * 4);
  Buffer<float> bad = dev.from_dlpack<float>(unaligned), good = dev.from_dlpack<float>(aligned);
  Buffer<float> ba = dev.alloc<float>(64);
  ba.upload(a);
  try {
    mod.kernel("vec4_add").launch(Grid{1}, ba, bad, uint32_t{16});
    ADD_FAILURE() << "a 4-byte aligned buffer was passed as vec<float, 4>*";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_CONTAINS(e.what(), "argument 2 ('b'): the buffer's address is aligned to 4 bytes, but vec<float, 4> values need 16");
  }
  mod.kernel("vec4_add").launch(Grid{1}, ba, good, uint32_t{16});
  for (int i = 0; i < 64; ++i) ASSERT_EQ(data_of<float>(aligned)[i], a[i] + b[i]);
}

// Export then import on the same device: one memory, two Buffers; either may be dropped first
// (the last one frees it), and dropping the import runs quiver's own export deleter without
// deadlocking on the device.
TEST_F(CpuInterop, RoundTripThroughQuiverInEitherOrder) {
  for (bool drop_original_first : {true, false}) {
    const uint32_t n = 700;
    const std::vector<float> x = random_floats(n), y = random_floats(n);
    std::optional<Buffer<float>> original(dev.alloc<float>(n));
    original->upload(y);
    std::optional<Buffer<float>> imported(dev.from_dlpack<float>(original->to_dlpack()));
    EXPECT_EQ(imported->native_handle(), original->native_handle());
    Buffer<float> bx = dev.alloc<float>(n);
    bx.upload(x);
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, *imported, 3.0f, n);
    std::vector<float> got(n);
    original->download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.0f * x[i] + y[i]);
    std::optional<Buffer<float>>& first = drop_original_first ? original : imported;
    std::optional<Buffer<float>>& second = drop_original_first ? imported : original;
    first.reset();
    mod.kernel("saxpy").launch(Grid{(n + 255) / 256}, bx, *second, -3.0f, n);   // still alive
    second->download(got);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], (3.0f * x[i] + y[i]) - 3.0f * x[i]);
    second.reset();
  }
}

TEST(CpuDlpack, MemoryOfOneCpuDeviceImportsIntoAnother) {
  quiver::test::ScopedEnv devices("QUIVER_CPU_DEVICES", "2");
  Device d0 = Device::open("cpu:0"), d1 = Device::open("cpu:1");
  Buffer<int32_t> a = d0.alloc<int32_t>(16 * 32);
  std::vector<int32_t> in(16 * 32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i * 7 - 100);
  a.upload(in);
  Buffer<int32_t> a1 = d1.from_dlpack<int32_t>(a.to_dlpack());
  Buffer<int32_t> out = d1.alloc<int32_t>(16 * 32);
  out.upload(std::vector<int32_t>(16 * 32, -1));
  d1.load(fatbin(), "test.qfb").kernel("tile_transpose").launch(Grid{2, 1}, a1, out, uint32_t{32});
  std::vector<int32_t> got(16 * 32);
  out.download(got);
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 32; ++c) ASSERT_EQ(got[c * 16 + r], in[r * 32 + c]);
}

TEST(CpuDlpack, CApiExportsAndImports) {
  qv_device dev = nullptr;
  ASSERT_EQ(qv_device_open("cpu", &dev), QV_SUCCESS) << qv_last_error_message();
  qv_buffer buf = nullptr;
  ASSERT_EQ(qv_buffer_alloc(dev, QV_TYPE_I16, 10, &buf), QV_SUCCESS);
  const int16_t values[10] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10};
  ASSERT_EQ(qv_buffer_upload(buf, values, sizeof values), QV_SUCCESS);
  uint64_t handle = 0;
  ASSERT_EQ(qv_buffer_native_handle(buf, &handle), QV_SUCCESS);
  DLManagedTensor* t = nullptr;
  ASSERT_EQ(qv_buffer_to_dlpack(buf, &t), QV_SUCCESS) << qv_last_error_message();
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->dl_tensor.data), handle);
  EXPECT_EQ(qv_buffer_free(buf), QV_SUCCESS);   // the tensor keeps the memory

  qv_buffer back = nullptr;
  ASSERT_EQ(qv_buffer_from_dlpack(dev, t, &back), QV_SUCCESS) << qv_last_error_message();
  size_t count = 0;
  EXPECT_EQ(qv_buffer_count(back, &count), QV_SUCCESS);
  EXPECT_EQ(count, 10u);
  int16_t got[10] = {};
  EXPECT_EQ(qv_buffer_download(back, got, sizeof got), QV_SUCCESS);
  EXPECT_EQ(std::memcmp(got, values, sizeof got), 0);
  EXPECT_EQ(qv_buffer_free(back), QV_SUCCESS);   // runs quiver's export deleter: memory freed

  int calls = 0;
  DLManagedTensor* complex = host_tensor(calls, DLDataType{kDLComplex, 64, 1}, {4}, 32);
  EXPECT_EQ(qv_buffer_from_dlpack(dev, complex, &back), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(qv_last_error_message(), "kDLComplex 64 bits has no quiver element type");
  EXPECT_EQ(calls, 0);
  complex->deleter(complex);
  EXPECT_EQ(qv_buffer_from_dlpack(dev, nullptr, &back), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_device_close(dev), QV_SUCCESS);
}

// Buffer::as: the same bytes as another element type, shared both ways and kept alive by the
// view when the original is dropped; the element count rounds down to whole elements.
TEST(BufferAs, SharesTheMemoryAsAnotherElementType) {
  Device dev = Device::open("cpu");
  std::mt19937 rng(std::random_device{}());
  std::vector<uint32_t> words(5);
  for (uint32_t& w : words) w = rng();
  Buffer<uint8_t> bytes;
  {
    Buffer<uint32_t> original = dev.alloc<uint32_t>(words.size());
    original.upload(words);
    bytes = original.as<uint8_t>();
    EXPECT_EQ(bytes.size(), 20u);
    EXPECT_EQ(bytes.native_handle(), original.native_handle());
    EXPECT_EQ(original.as<uint64_t>().size(), 2u);   // 20 bytes: two whole 8-byte elements
  }
  std::vector<uint8_t> seen(20);
  bytes.download(seen);
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], (words[i / 4] >> (8 * (i % 4))) & 0xFF) << i;   // little-endian words
  std::vector<uint8_t> written(20);
  for (uint8_t& b : written) b = static_cast<uint8_t>(rng());
  bytes.upload(written);
  std::vector<uint32_t> back(5);
  bytes.as<uint32_t>().download(back);
  for (size_t i = 0; i < back.size(); ++i) {
    uint32_t expect = 0;
    for (int k = 3; k >= 0; --k) expect = expect << 8 | written[4 * i + k];
    EXPECT_EQ(back[i], expect) << i;
  }
}

}  // namespace
