// The C API: the same launch through quiver.h, and its status codes and messages.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstdio>
#include <random>
#include <string>

#include "c_api_smoke.h"
#include "quiver/quiver.h"
#include "test_fatbin.h"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::vector<std::byte>& fatbin() {
  static const std::vector<std::byte> bytes = quiver::test::make_test_fatbin();
  return bytes;
}

TEST(CApi, SaxpyFromC) {
  char message[512];
  const uint32_t seed = std::random_device{}();
  EXPECT_EQ(qv_test_c_saxpy(fatbin().data(), fatbin().size(), seed, message, sizeof message), 1)
      << message << " (seed " << seed << ")";
}

TEST(CApi, LoadFromFile) {
  const std::string path = ::testing::TempDir() + "quiver_c_api_test.qfb";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(fatbin().data(), 1, fatbin().size(), f), fatbin().size());
  std::fclose(f);
  qv_device dev = nullptr;
  qv_module mod = nullptr;
  qv_kernel k = nullptr;
  ASSERT_EQ(qv_device_open("cpu", &dev), QV_SUCCESS) << qv_last_error_message();
  ASSERT_EQ(qv_module_load_file(dev, path.c_str(), &mod), QV_SUCCESS) << qv_last_error_message();
  EXPECT_EQ(qv_kernel_get(mod, "block_sum", &k), QV_SUCCESS) << qv_last_error_message();
  qv_module missing = nullptr;
  EXPECT_NE(qv_module_load_file(dev, (path + ".absent").c_str(), &missing), QV_SUCCESS);
  EXPECT_THAT(qv_last_error_message(), HasSubstr(".absent"));
  EXPECT_EQ(missing, nullptr);
  qv_kernel_free(k);
  qv_module_free(mod);
  qv_device_close(dev);
  std::remove(path.c_str());
}

class CApiErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(qv_device_open("cpu", &dev), QV_SUCCESS) << qv_last_error_message();
    ASSERT_EQ(qv_module_load_memory(dev, fatbin().data(), fatbin().size(), "c.qfb", &mod), QV_SUCCESS)
        << qv_last_error_message();
    ASSERT_EQ(qv_kernel_get(mod, "saxpy", &saxpy), QV_SUCCESS) << qv_last_error_message();
    ASSERT_EQ(qv_buffer_alloc(dev, QV_TYPE_F32, n, &x), QV_SUCCESS);
    ASSERT_EQ(qv_buffer_alloc(dev, QV_TYPE_F32, n, &y), QV_SUCCESS);
    ASSERT_EQ(qv_buffer_alloc(dev, QV_TYPE_I32, n, &yi), QV_SUCCESS);
    std::vector<uint32_t> poison(n, 0xABABABABu);
    ASSERT_EQ(qv_buffer_upload(y, poison.data(), n * 4), QV_SUCCESS);
    ASSERT_EQ(qv_buffer_upload(x, poison.data(), n * 4), QV_SUCCESS);
  }
  void TearDown() override {
    for (qv_buffer b : {x, y, yi})
      if (b) qv_buffer_free(b);
    if (saxpy) qv_kernel_free(saxpy);
    if (mod) qv_module_free(mod);
    if (dev) qv_device_close(dev);
  }
  void expect_y_poisoned() {
    std::vector<uint32_t> got(n);
    ASSERT_EQ(qv_buffer_download(y, got.data(), n * 4), QV_SUCCESS);
    for (uint32_t v : got) ASSERT_EQ(v, 0xABABABABu) << "a rejected launch wrote to y";
  }

  const uint32_t n = 512;
  const uint32_t grid[3] = {2, 1, 1};
  qv_device dev = nullptr;
  qv_module mod = nullptr;
  qv_kernel saxpy = nullptr;
  qv_buffer x = nullptr, y = nullptr, yi = nullptr;
};

TEST_F(CApiErrors, WrongArgumentsAreRejectedWithTheSameMessages) {
  qv_arg args[4] = {qv_arg_buffer(x), qv_arg_buffer(y), qv_arg_i32(2), qv_arg_u32(n)};
  EXPECT_EQ(qv_kernel_launch(saxpy, grid, args, 4), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(qv_last_error_message(), "kernel 'saxpy': argument 3 ('a'): expected float scalar, got int32_t");

  EXPECT_EQ(qv_kernel_launch(saxpy, grid, args, 3), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(qv_last_error_message(), "kernel 'saxpy': expected 4 arguments (x, y, a, n), got 3");

  args[2] = qv_arg_f32(2.0f);
  args[1] = qv_arg_buffer(yi);
  EXPECT_EQ(qv_kernel_launch(saxpy, grid, args, 4), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(qv_last_error_message(),
               "kernel 'saxpy': argument 2 ('y'): expected Buffer<float>, got Buffer<int32_t>");

  args[1] = qv_arg_buffer(nullptr);
  EXPECT_EQ(qv_kernel_launch(saxpy, grid, args, 4), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(qv_last_error_message(), HasSubstr("argument 2: qv_buffer is NULL"));

  args[1] = qv_arg_buffer(y);
  args[3].type = static_cast<qv_type>(99);
  EXPECT_EQ(qv_kernel_launch(saxpy, grid, args, 4), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(qv_last_error_message(), HasSubstr("argument 4: invalid qv_type 99"));
  expect_y_poisoned();
}

TEST_F(CApiErrors, StatusesForLookupsAndHandles) {
  qv_kernel k = nullptr;
  EXPECT_EQ(qv_kernel_get(mod, "nope", &k), QV_ERROR_NOT_FOUND);
  EXPECT_THAT(qv_last_error_message(), AllOf(HasSubstr("'nope'"), HasSubstr("c.qfb"), HasSubstr("saxpy")));
  EXPECT_EQ(k, nullptr);

  qv_device d = nullptr;
  EXPECT_EQ(qv_device_open("gpu9000", &d), QV_ERROR_NOT_FOUND);
  EXPECT_THAT(qv_last_error_message(), HasSubstr("unknown backend 'gpu9000'"));
  EXPECT_EQ(qv_device_open("cpu", nullptr), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_buffer_free(nullptr), QV_ERROR_INVALID_ARGUMENT);

  std::vector<float> big(n + 1);
  EXPECT_EQ(qv_buffer_upload(y, big.data(), big.size() * 4), QV_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(qv_last_error_message(), HasSubstr("2052 bytes"));
  size_t count = 0;
  EXPECT_EQ(qv_buffer_count(y, &count), QV_SUCCESS);
  EXPECT_EQ(count, n);

  char name[8];
  EXPECT_EQ(qv_device_backend_name(dev, name, sizeof name), QV_SUCCESS);
  EXPECT_STREQ(name, "cpu");

  const char junk[] = "not a fat binary";
  qv_module m = nullptr;
  EXPECT_EQ(qv_module_load_memory(dev, junk, sizeof junk, "junk.qfb", &m), QV_ERROR_INVALID_FAT_BINARY);
  EXPECT_THAT(qv_last_error_message(), HasSubstr("junk.qfb"));
  expect_y_poisoned();
}

}  // namespace
