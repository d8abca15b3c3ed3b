// quiver::ops argument checks: wrong sizes, shapes, element types, empty or foreign buffers
// throw quiver::Error(InvalidArgument) naming the op and the argument, and nothing is launched
// (the output keeps its poison).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gate.h"

namespace {

namespace ops = quiver::ops;
using quiver::Buffer;

quiver::Device& dev() { return gate::device(); }

template <typename T>
Buffer<T> zeros(size_t n) {
  return gate::upload(std::vector<T>(n, T{}));
}

// Runs `call`, expects InvalidArgument with exactly `message`, and checks `out` was not written.
template <typename F, typename O = float>
void expect_error(F&& call, const std::string& message, const Buffer<O>* out = nullptr) {
  std::vector<O> before;
  if (out) before = gate::download(*out);
  try {
    call();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.code(), quiver::ErrorCode::InvalidArgument) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
  }
  if (out) {
    dev().synchronize();
    std::vector<O> after = gate::download(*out);
    EXPECT_EQ(0, std::memcmp(before.data(), after.data(), before.size() * sizeof(O)))
        << "a failed call wrote its output";
  }
}

TEST(OpsErrors, LibraryIsBuiltInAndListsItsKernels) {
  ASSERT_TRUE(ops::library_built_in());
  std::vector<std::string> names = ops::library(dev()).kernel_names();
  for (const char* k : {"rms_norm<float>", "rms_norm<bf16>", "softmax<half>", "attention<float, 128>",
                        "attention<bf16, 64>", "matvec<half>", "matvec_w16<bf16>", "matvec_w16<half>", "matvec_q4_0",
                        "matvec_q4_0r", "matvec_q8_0r", "matvec_q4_0r_a8", "matvec_q8_0r_a8", "matvec_q8_0r_a8_split",
                        "quantize_activations_q8", "add_rms_norm_q8", "dequantize_q4_0r<half>", "matvec_q4_k", "matvec_q6_k", "matvec_q4_k_a8", "matvec_q6_kr_a8", "matvec_q4_k_a8_split", "matvec_q6_kr_a8_split",
                        "dequantize_q6_kr<half>", "matmul_w8a8", "argmax<bf16>",
                        "add<half>", "mul<float>", "kv_append<bf16>"})
    EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
}

// The split-kernel threshold is read at each call; a value that is not a row count names itself.
TEST(OpsErrors, QuantSplitRowsVariable) {
  auto w = zeros<uint8_t>(ops::q8_0_bytes(1, 1024));
  auto xq = zeros<uint8_t>(ops::activation_q8_bytes(1024));
  auto y = gate::poisoned<float>(1);
  ASSERT_EQ(::setenv("QUIVER_QUANT_SPLIT_ROWS", "4k", 1), 0);
  expect_error([&] { ops::matvec_q8_0r_a8(dev(), w, xq, y, 1, 1024); },
               "matvec_q8_0r_a8: QUIVER_QUANT_SPLIT_ROWS=4k is not a row count (digits only)", &y);
  ::unsetenv("QUIVER_QUANT_SPLIT_ROWS");
}

TEST(OpsErrors, RmsNormSizes) {
  auto x = zeros<float>(2 * 4096), w = zeros<float>(4095), out = gate::poisoned<float>(2 * 4096);
  expect_error([&] { ops::rms_norm(dev(), x, w, out, 2, 4096); },
               "rms_norm: w has 4095 elements, expected cols = 4096", &out);
  auto w_ok = zeros<float>(4096);
  expect_error([&] { ops::rms_norm(dev(), x, w_ok, out, 3, 4096); },
               "rms_norm: x has 8192 elements, expected at least rows * cols = 12288", &out);
  auto small_out = gate::poisoned<float>(100);
  expect_error([&] { ops::rms_norm(dev(), x, w_ok, small_out, 2, 4096); },
               "rms_norm: out has 100 elements, expected at least rows * cols = 8192", &small_out);
  expect_error([&] { ops::rms_norm(dev(), x, w_ok, out, 2, 4096, -1.0f); },
               "rms_norm: eps = -1.000000 must be finite and >= 0", &out);
}

TEST(OpsErrors, ElementTypes) {
  auto x = zeros<float>(64), out = gate::poisoned<float>(64);
  auto w_int = zeros<int32_t>(8);
  expect_error([&] { ops::rms_norm(dev(), x, w_int, out, 8, 8); },
               "rms_norm: w is a Buffer<int32_t> but x is a Buffer<float>; they must have the same element type",
               &out);
  auto x_int = zeros<int32_t>(64);
  expect_error([&] { ops::softmax(dev(), x_int, out, 8, 8); },
               "softmax: x is a Buffer<int32_t>; softmax takes Buffer<float, bf16, half>", &out);
  auto w = zeros<float>(8);
  auto b_u8 = zeros<uint8_t>(8);
  expect_error([&] { ops::layer_norm(dev(), x, w, b_u8, out, 8, 8); },
               "layer_norm: b is a Buffer<uint8_t> but x is a Buffer<float>; they must have the same element type",
               &out);
}

TEST(OpsErrors, EmptyAndForeignBuffers) {
  auto x = zeros<float>(16), w = zeros<float>(4), out = gate::poisoned<float>(16);
  Buffer<float> empty;
  expect_error([&] { ops::rms_norm(dev(), x, empty, out, 4, 4); },
               "rms_norm: w is an empty Buffer (default-constructed or moved-from)", &out);
  quiver::Device other = quiver::Device::open(dev().backend_name());
  Buffer<float> foreign = other.alloc<float>(4);
  expect_error([&] { ops::rms_norm(dev(), x, foreign, out, 4, 4); },
               "rms_norm: w was allocated on a different quiver::Device than the one the op runs on", &out);
}

TEST(OpsErrors, ShapeLimits) {
  auto x = zeros<float>(16), w = zeros<float>(16), out = gate::poisoned<float>(16);
  expect_error([&] { ops::rms_norm(dev(), x, w, out, size_t{1} << 20, size_t{1} << 12); },
               "rms_norm: rows * cols reaches 2^32 elements; the op library indexes tensors with 32-bit integers",
               &out);
  // The quantized formats' byte counts too: 2^20 rows of 4096 q8_0 elements are 2^32 * 34 / 32
  // bytes (fewer than 2^32 elements), which the kernels could not index.
  auto w8 = zeros<uint8_t>(34);
  auto x4096 = zeros<float>(4096);
  expect_error([&] { ops::matvec_q8_0r(dev(), w8, x4096, out, size_t{1} << 20, 4096); },
               "matvec_q8_0r: rows * (cols / 32) * 34 reaches 2^32 elements; the op library indexes tensors with "
               "32-bit integers",
               &out);
  auto q = zeros<uint8_t>(34);
  auto xq = zeros<float>(40);
  expect_error([&] { ops::matvec_q8_0(dev(), q, xq, out, 1, 40); },
               "matvec_q8_0: cols = 40 is not a multiple of the 32-element quantization block", &out);
  expect_error([&] { ops::matvec_q4_0(dev(), q, xq, out, 2, 32); },
               "matvec_q4_0: w has 34 elements, expected at least rows * (cols / 32) * 18 bytes = 36", &out);
  expect_error([&] { ops::matvec_q4_0r(dev(), q, xq, out, 1, 32); },
               "matvec_q4_0r: cols = 32 is not a multiple of 1024 (a repacked row is whole chunks of 32 blocks)", &out);
  auto xr = zeros<float>(1024);
  expect_error([&] { ops::matvec_q8_0r(dev(), q, xr, out, 1, 1024); },
               "matvec_q8_0r: w has 34 elements, expected at least rows * (cols / 32) * 34 bytes = 1088", &out);
  auto x_q8 = gate::poisoned<uint8_t>(1024 + 127);
  expect_error([&] { ops::quantize_activations_q8(dev(), xr, x_q8, 1000); },
               "quantize_activations_q8: n = 1000 is not a multiple of the 32-element quantization block", &x_q8);
  expect_error([&] { ops::quantize_activations_q8(dev(), xr, x_q8, 1024); },
               "quantize_activations_q8: xq has 1151 elements, expected at least n + n / 32 * 4 bytes = 1152", &x_q8);
  auto wr = zeros<uint8_t>(ops::q4_0_bytes(1, 1024));
  expect_error([&] { ops::matvec_q4_0r_a8(dev(), wr, x_q8, out, 1, 1024); },
               "matvec_q4_0r_a8: x has 1151 elements, expected at least cols + cols / 32 * 4 bytes = 1152", &out);
  expect_error([&] { ops::detail::matvec_quantized(dev(), ops::detail::operand(q), ops::detail::operand(x_q8),
                                                   ops::detail::operand(out), 1, 32, ops::detail::QuantFormat::Q8_0); },
               "matvec_q8_0_a8: int8 activations (x of uint8) take the formats q4_0r, q8_0r, q4_k and q6_kr only", &out);
  auto k6 = zeros<uint8_t>(ops::q6_k_bytes(1, 1024));
  auto x_q8k = gate::poisoned<uint8_t>(ops::activation_q8_bytes(1024));
  expect_error([&] { ops::detail::matvec_quantized(dev(), ops::detail::operand(k6), ops::detail::operand(xr),
                                                   ops::detail::operand(out), 1, 1024, ops::detail::QuantFormat::Q6_KR); },
               "matvec_q6_kr: this format takes int8 activations only (x of uint8, quantize_activations_q8)", &out);
  expect_error([&] { ops::matvec_q6_kr_a8(dev(), k6, x_q8k, out, 2, 1024); },
               "matvec_q6_kr_a8: w has 840 elements, expected at least rows * (cols / 256) * 210 bytes = 1680", &out);
  expect_error([&] { ops::matvec_q4_k_a8(dev(), k6, x_q8, out, 1, 1024); },
               "matvec_q4_k_a8: x has 1151 elements, expected at least cols + cols / 32 * 4 bytes = 1152", &out);
  expect_error([&] { ops::matvec_q4_k_a8(dev(), k6, x_q8k, out, 1, 1000); },
               "matvec_q4_k_a8: cols = 1000 is not a multiple of the 256-element super-block", &out);
  auto sum = gate::poisoned<float>(1024);
  expect_error([&] { ops::add_rms_norm_q8(dev(), xr, xr, zeros<float>(1000), sum, sum, x_q8, 1, 1000); },
               "add_rms_norm_q8: cols = 1000 is not a multiple of the 32-element quantization block", &sum);
  expect_error([&] { ops::add_rms_norm_q8(dev(), xr, xr, zeros<float>(1024), sum, sum, x_q8, 1, 1024); },
               "add_rms_norm_q8: xq has 1151 elements, expected at least rows * (cols + cols / 32 * 4) bytes = 1152",
               &sum);
  std::vector<uint8_t> host(576);
  expect_error([&] { ops::repack_q4_0(host, 2, 1024); },
               "repack_q4_0: blocks has 576 bytes, expected rows * (cols / 32) * 18 = 1152");
  expect_error([&] { ops::repack_q8_0(host, 1, 96); },
               "repack_q8_0: cols = 96 is not a multiple of 1024 (a repacked row is whole chunks of 32 blocks)");
  expect_error([&] { ops::repack_q6_k(host, 1, 512); },
               "repack_q6_k: blocks has 576 bytes, expected rows * (cols / 256) * 210 = 420");
  expect_error([&] { ops::repack_q6_k(host, 1, 300); },
               "repack_q6_k: cols = 300 is not a multiple of the 256-element super-block");
  auto k_blocks = zeros<uint8_t>(210);
  auto xk = zeros<float>(512);
  auto k_quant = [&](bool q6, size_t rows, size_t cols, const std::string& message) {
    auto call = q6 ? ops::matvec_q6_k : ops::matvec_q4_k;
    expect_error([&] { call(dev(), k_blocks, xk, out, rows, cols); }, message, &out);
  };
  k_quant(false, 1, 300, "matvec_q4_k: cols = 300 is not a multiple of the 256-element super-block");
  k_quant(true, 2, 256, "matvec_q6_k: w has 210 elements, expected at least rows * (cols / 256) * 210 bytes = 420");
  k_quant(false, 1, 512, "matvec_q4_k: w has 210 elements, expected at least rows * (cols / 256) * 144 bytes = 288");
}

TEST(OpsErrors, MatvecElementTypes) {
  auto w = zeros<quiver::bf16>(4 * 8);
  auto x_half = zeros<quiver::half>(8);
  auto x = zeros<float>(8), out = gate::poisoned<float>(4);
  auto out_bf16 = gate::poisoned<quiver::bf16>(4);
  expect_error([&] { ops::matvec(dev(), w, x_half, out, 4, 8); },
               "matvec: x is a Buffer<half> but w is a Buffer<bf16>; x must be a Buffer<bf16> or a Buffer<float>",
               &out);
  expect_error([&] { ops::matvec(dev(), w, x, out_bf16, 4, 8); },
               "matvec: y is a Buffer<bf16> but x is a Buffer<float>; they must have the same element type",
               &out_bf16);
  auto w_f32 = zeros<float>(4 * 8);
  expect_error([&] { ops::matvec(dev(), w_f32, x_half, out, 4, 8); },
               "matvec: x is a Buffer<half> but w is a Buffer<float>; they must have the same element type", &out);
  expect_error([&] { ops::matvec(dev(), w, x, out, 5, 8); },
               "matvec: w has 32 elements, expected at least rows * cols = 40", &out);
}

TEST(OpsErrors, Rope) {
  auto x = zeros<float>(16), out = gate::poisoned<float>(16);
  auto pos = zeros<int32_t>(2);
  auto freq = gate::upload(ops::rope_inv_freq(8));   // 4 frequencies: rotary_dim 8
  expect_error([&] { ops::rope(dev(), x, pos, freq, out, 2, 1, 7); }, "rope: head_dim = 7 must be even and > 0", &out);
  expect_error([&] { ops::rope(dev(), x, pos, freq, out, 2, 1, 6); },
               "rope: inv_freq has 4 elements, expected 1 to head_dim / 2 = 3 (rotary_dim / 2)", &out);
  expect_error([&] { ops::rope(dev(), x, pos, freq, out, 3, 1, 8); },
               "rope: x has 16 elements, expected at least tokens * heads * head_dim = 24", &out);
  EXPECT_THROW(ops::rope_inv_freq(7), quiver::Error);
}

TEST(OpsErrors, Attention) {
  auto q = zeros<float>(4 * 64), k = zeros<float>(4 * 64), v = zeros<float>(4 * 64);
  auto o = gate::poisoned<float>(4 * 64);
  ops::AttentionShape s;
  s.q_heads = 1;
  s.kv_heads = 1;
  s.q_len = 4;
  s.kv_len = 4;
  s.head_dim = 96;
  expect_error([&] { ops::attention(dev(), q, k, v, o, s); },
               "attention: head_dim = 96 is not supported (64 or 128)", &o);
  s.head_dim = 64;
  s.q_heads = 3;
  s.kv_heads = 2;
  expect_error([&] { ops::attention(dev(), q, k, v, o, s); },
               "attention: q_heads = 3 must be a multiple of kv_heads = 2", &o);
  s.q_heads = 1;
  s.kv_heads = 1;
  s.kv_len = 3;
  s.causal = true;
  expect_error([&] { ops::attention(dev(), q, k, v, o, s); },
               "attention: causal attention needs kv_len >= q_len (the queries are the last q_len of the kv_len "
               "positions); got q_len = 4, kv_len = 3",
               &o);
  s.kv_len = 5;
  s.kv_capacity = 4;
  expect_error([&] { ops::attention(dev(), q, k, v, o, s); }, "attention: kv_len = 5 exceeds kv_capacity = 4", &o);
  s.kv_capacity = 8;
  expect_error([&] { ops::attention(dev(), q, k, v, o, s); },
               "attention: k has 256 elements, expected at least batch * kv_heads * kv_capacity * head_dim = 512", &o);
}

TEST(OpsErrors, MatmulW8A8Scales) {
  auto a = zeros<int8_t>(4 * 8), b = zeros<int8_t>(3 * 8);
  auto sa = zeros<float>(4), sb = zeros<float>(2), c = gate::poisoned<float>(12);
  expect_error([&] { ops::matmul_w8a8(dev(), a, b, sa, sb, c, 4, 3, 8); },
               "matmul_w8a8: b_scale has 2 elements, expected n = 3", &c);
  expect_error([&] { ops::matmul_w8a8(dev(), a, b, sa, sb, c, 4, 3, 200000); },
               "matmul_w8a8: k = 200000 exceeds 131072 (the int32 accumulator could overflow)", &c);
}

TEST(OpsErrors, Argmax) {
  auto x = zeros<float>(3 * 10);
  auto out = gate::poisoned<int32_t>(3);
  auto out_float = gate::poisoned<float>(3);
  expect_error([&] { ops::argmax(dev(), x, out, 4, 10); },
               "argmax: x has 30 elements, expected at least rows * cols = 40", &out);
  expect_error([&] { ops::argmax(dev(), x, out, 6, 5); }, "argmax: out has 3 elements, expected at least rows = 6",
               &out);
  // The typed API takes only Buffer<int32_t>; the type-erased entry point checks it again.
  expect_error([&] { ops::detail::argmax(dev(), ops::detail::operand(x), ops::detail::operand(out_float), 3, 10); },
               "argmax: out is a Buffer<float>; argmax takes Buffer<int32_t>", &out_float);
  auto x_int = zeros<int32_t>(30);
  expect_error([&] { ops::argmax(dev(), x_int, out, 3, 10); },
               "argmax: x is a Buffer<int32_t>; argmax takes Buffer<float, bf16, half>", &out);
  expect_error([&] { ops::argmax(dev(), x, out, 3, 0); }, "argmax: cols is 0: an empty row has no largest element",
               &out);
}

TEST(OpsErrors, Topk) {
  auto x = zeros<float>(30);
  auto values = gate::poisoned<float>(12);
  auto indices = dev().alloc<int32_t>(12);
  expect_error([&] { ops::topk(dev(), x, values, indices, 3, 10, 0); }, "topk: k = 0 must be between 1 and cols = 10",
               &values);
  expect_error([&] { ops::topk(dev(), x, values, indices, 3, 10, 11); },
               "topk: values has 12 elements, expected at least rows * k = 33", &values);
  auto half_values = gate::poisoned<quiver::half>(12);
  expect_error([&] { ops::topk(dev(), x, half_values, indices, 3, 10, 4); },
               "topk: values is a Buffer<half> but x is a Buffer<float>; they must have the same element type");
}

TEST(OpsErrors, AddMul) {
  auto a = zeros<float>(16), b = zeros<float>(15), out = gate::poisoned<float>(16);
  expect_error([&] { ops::add(dev(), a, b, out, 16); }, "add: b has 15 elements, expected at least n = 16", &out);
  auto small_out = gate::poisoned<float>(8);
  expect_error([&] { ops::mul(dev(), a, a, small_out, 16); }, "mul: out has 8 elements, expected at least n = 16",
               &small_out);
  auto b_half = zeros<quiver::half>(16);
  expect_error([&] { ops::mul(dev(), a, b_half, out, 16); },
               "mul: b is a Buffer<half> but a is a Buffer<float>; they must have the same element type", &out);
}

TEST(OpsErrors, Convert) {
  auto x = zeros<float>(16);
  auto same = gate::poisoned<float>(16);
  auto small = gate::poisoned<quiver::bf16>(8);
  expect_error([&] { ops::convert(dev(), x, same, 16); }, "convert: x and out are both float: there is nothing to convert",
               &same);
  expect_error([&] { ops::convert(dev(), x, small, 16); }, "convert: out has 8 elements, expected at least n = 16",
               &small);
  auto ints = dev().alloc<int32_t>(16);
  expect_error([&] { ops::convert(dev(), x, ints, 16); },
               "convert: out is a Buffer<int32_t>; convert takes Buffer<float, bf16, half>");
}

TEST(OpsErrors, KvAppend) {
  ops::KvCacheShape s;
  s.kv_heads = 2;
  s.head_dim = 4;
  s.kv_capacity = 8;
  auto src = zeros<float>(3 * 2 * 4), cache = gate::poisoned<float>(2 * 8 * 4);
  auto position = zeros<int32_t>(1);
  expect_error([&] { ops::kv_append(dev(), src, position, cache, 4, s); },
               "kv_append: src has 24 elements, expected at least batch * tokens * kv_heads * head_dim = 32", &cache);
  expect_error([&] { ops::kv_append(dev(), src, position, cache, 9, s); },
               "kv_append: tokens = 9 exceeds kv_capacity = 8", &cache);
  {
    // attention_decode: its own workspace size, the grouping, the position's type.
    ops::KvCacheShape c{1, 2, 64, 100, ops::AttentionLayout::BHSD};
    auto q = zeros<float>(4 * 64), kc = zeros<float>(2 * 100 * 64), o = gate::poisoned<float>(4 * 64);
    auto pos = zeros<int32_t>(1);
    auto small = zeros<float>(ops::attention_decode_workspace(4, c) - 1);
    expect_error([&] { ops::attention_decode(dev(), q, kc, kc, pos, o, small, 4, c); },
                 "attention_decode: workspace has 527 elements, expected at least "
                 "attention_decode_workspace(q_heads, cache) = 528", &o);
    auto work = zeros<float>(ops::attention_decode_workspace(4, c));
    expect_error([&] { ops::attention_decode(dev(), q, kc, kc, pos, o, work, 3, c); },
                 "attention_decode: q_heads = 3 must be a multiple of kv_heads = 2", &o);
    // attention_decode_q8: o_q8 holds a row of 256 quants and 8 float scales (288 bytes).
    auto oq = gate::poisoned<uint8_t>(287);
    expect_error([&] { ops::attention_decode_q8(dev(), q, kc, kc, pos, o, oq, work, 4, c); },
                 "attention_decode_q8: o_q8 has 287 elements, expected at least "
                 "batch * activation_q8_bytes(q_heads * head_dim) bytes = 288", &o);
  }
  auto position_u32 = zeros<uint32_t>(1);
  expect_error([&] {
    ops::detail::kv_append(dev(), ops::detail::operand(src), ops::detail::operand(position_u32),
                           ops::detail::operand(cache), 3, s);
  },
               "kv_append: position is a Buffer<uint32_t>; kv_append takes Buffer<int32_t>", &cache);
  s.batch = 2;
  auto src2 = zeros<float>(2 * 3 * 2 * 4);
  expect_error([&] { ops::kv_append(dev(), src2, position, cache, 3, s); },
               "kv_append: position has 1 elements, expected at least batch = 2", &cache);
  s.batch = 1;
  s.kv_capacity = 9;
  expect_error([&] { ops::kv_append(dev(), src, position, cache, 3, s); },
               "kv_append: cache has 64 elements, expected at least batch * kv_heads * kv_capacity * head_dim = 72",
               &cache);
  s.head_dim = 0;
  expect_error([&] { ops::kv_append(dev(), src, position, cache, 3, s); },
               "kv_append: kv_heads, head_dim and kv_capacity must be > 0 (got 2, 0, 9)", &cache);
  s.head_dim = 4;
  s.kv_capacity = 8;
  auto cache_bf16 = zeros<quiver::bf16>(2 * 8 * 4);
  expect_error([&] { ops::kv_append(dev(), src, position, cache_bf16, 3, s); },
               "kv_append: cache is a Buffer<bf16> but src is a Buffer<float>; they must have the same element type",
               &cache_bf16);
}

TEST(OpsErrors, ZeroSizedShapesLaunchNothing) {
  auto x = zeros<float>(4), w = zeros<float>(0), out = gate::poisoned<float>(4);
  std::vector<float> before = gate::download(out);
  ops::rms_norm(dev(), x, w, out, 4, 0);
  ops::softmax(dev(), x, out, 0, 4);
  ops::gelu(dev(), x, out, 0);
  std::vector<float> after = gate::download(out);
  EXPECT_EQ(0, std::memcmp(before.data(), after.data(), before.size() * sizeof(float)));
}

}  // namespace
