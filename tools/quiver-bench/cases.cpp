#include "cases.h"

#include <bit>
#include <cmath>
#include <memory>
#include <random>

#include <quiver/ops.h>

namespace quiver_bench {
namespace {

using quiver::Buffer;
using quiver::Device;

std::mt19937& rng() {
  static std::mt19937 g(12345);
  return g;
}

template <typename T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, quiver::bf16>) {
    uint32_t u = std::bit_cast<uint32_t>(x);
    return quiver::bf16{static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16)};
  } else {
    return quiver::half{std::bit_cast<uint16_t>(static_cast<_Float16>(x))};
  }
}

// A device buffer of n random values in [lo, hi). Large buffers repeat a 1M-element random
// block (the values only need to be ordinary numbers; generating 10^10 randoms would dominate).
template <typename T>
Buffer<T> random_buffer(const Device& dev, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> block(std::min<size_t>(n, size_t(1) << 20));
  for (auto& v : block) v = from_float<T>(d(rng()));
  std::vector<T> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = block[i % block.size()];
  auto b = dev.alloc<T>(n);
  b.upload(host);
  return b;
}

std::string dims(std::initializer_list<size_t> d) {
  std::string s;
  for (size_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

template <typename T> const char* dtype_name();
template <> const char* dtype_name<float>() { return "f32"; }
template <> const char* dtype_name<quiver::bf16>() { return "bf16"; }
template <> const char* dtype_name<quiver::half>() { return "f16"; }

// Row ops over M x N (norms, softmax) and element-wise ops over M * N.
template <typename T>
void add_row_cases(std::vector<Case>& cases, size_t m, size_t n) {
  const double es = sizeof(T), mn = double(m) * n;
  const std::string dt = dtype_name<T>(), shape = dims({m, n});
  auto key = [&](const std::string& what) { return what + "_" + dt + "_" + shape + "_GBps"; };
  cases.push_back({"rms_norm", dt, shape, 2 * mn * es + n * es, 0, key("rmsnorm_torch"),
                   [=](const Device& dev, size_t sets) -> Runner {
                     auto w = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<T>>>>();
                     for (size_t s = 0; s < sets; ++s) xs->push_back({random_buffer<T>(dev, m * n), dev.alloc<T>(m * n)});
                     return [=, &dev](size_t s) { quiver::ops::rms_norm(dev, (*xs)[s].first, *w, (*xs)[s].second, m, n, 1e-6f); };
                   }});
  cases.push_back({"layer_norm", dt, shape, 2 * mn * es + 2 * n * es, 0, key("layernorm_torch"),
                   [=](const Device& dev, size_t sets) -> Runner {
                     auto w = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto b = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<T>>>>();
                     for (size_t s = 0; s < sets; ++s) xs->push_back({random_buffer<T>(dev, m * n), dev.alloc<T>(m * n)});
                     return [=, &dev](size_t s) { quiver::ops::layer_norm(dev, (*xs)[s].first, *w, *b, (*xs)[s].second, m, n, 1e-5f); };
                   }});
  cases.push_back({"add_rms_norm", dt, shape, 4 * mn * es + n * es, 0, "",
                   [=](const Device& dev, size_t sets) -> Runner {
                     auto w = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     struct Set { Buffer<T> x, r, sum, out; };
                     auto xs = std::make_shared<std::vector<Set>>();
                     for (size_t s = 0; s < sets; ++s)
                       xs->push_back({random_buffer<T>(dev, m * n), random_buffer<T>(dev, m * n), dev.alloc<T>(m * n), dev.alloc<T>(m * n)});
                     return [=, &dev](size_t s) {
                       auto& v = (*xs)[s];
                       quiver::ops::add_rms_norm(dev, v.x, v.r, *w, v.sum, v.out, m, n, 1e-6f);
                     };
                   }});
  for (bool log : {false, true})
    cases.push_back({log ? "log_softmax" : "softmax", dt, shape, 2 * mn * es, 0, log ? "" : key("softmax_triton"),
                     [=](const Device& dev, size_t sets) -> Runner {
                       auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<T>>>>();
                       for (size_t s = 0; s < sets; ++s) xs->push_back({random_buffer<T>(dev, m * n, -8, 8), dev.alloc<T>(m * n)});
                       return [=, &dev](size_t s) {
                         if (log) quiver::ops::log_softmax(dev, (*xs)[s].first, (*xs)[s].second, m, n);
                         else quiver::ops::softmax(dev, (*xs)[s].first, (*xs)[s].second, m, n);
                       };
                     }});
  cases.push_back({"silu_gate", dt, shape, 3 * mn * es, 0, key("silu_gate_torch_eager"),
                   [=](const Device& dev, size_t sets) -> Runner {
                     struct Set { Buffer<T> x, g, out; };
                     auto xs = std::make_shared<std::vector<Set>>();
                     for (size_t s = 0; s < sets; ++s)
                       xs->push_back({random_buffer<T>(dev, m * n), random_buffer<T>(dev, m * n), dev.alloc<T>(m * n)});
                     return [=, &dev](size_t s) { quiver::ops::silu_gate(dev, (*xs)[s].x, (*xs)[s].g, (*xs)[s].out, m * n); };
                   }});
  for (bool tanh_form : {false, true})
    cases.push_back({tanh_form ? "gelu_tanh" : "gelu_erf", dt, shape, 2 * mn * es, 0, "",
                     [=](const Device& dev, size_t sets) -> Runner {
                       auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<T>>>>();
                       for (size_t s = 0; s < sets; ++s) xs->push_back({random_buffer<T>(dev, m * n, -4, 4), dev.alloc<T>(m * n)});
                       auto form = tanh_form ? quiver::ops::GeluForm::Tanh : quiver::ops::GeluForm::Erf;
                       return [=, &dev](size_t s) { quiver::ops::gelu(dev, (*xs)[s].first, (*xs)[s].second, m * n, form); };
                     }});
  // rope: M tokens of N / 128 heads of 128 (the whole head rotated), NeoX style.
  if (n % 128 == 0)
    cases.push_back({"rope", dt, shape, 2 * mn * es + 4.0 * m, 0, "",
                     [=](const Device& dev, size_t sets) -> Runner {
                       auto freq = std::make_shared<Buffer<float>>(dev.alloc<float>(64));
                       freq->upload(quiver::ops::rope_inv_freq(128));
                       std::vector<int32_t> pos(m);
                       for (size_t i = 0; i < m; ++i) pos[i] = static_cast<int32_t>(i % 8192);
                       auto p = std::make_shared<Buffer<int32_t>>(dev.alloc<int32_t>(m));
                       p->upload(pos);
                       auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<T>>>>();
                       for (size_t s = 0; s < sets; ++s) xs->push_back({random_buffer<T>(dev, m * n), dev.alloc<T>(m * n)});
                       return [=, &dev](size_t s) {
                         quiver::ops::rope(dev, (*xs)[s].first, *p, *freq, (*xs)[s].second, m, n / 128, 128);
                       };
                     }});
}

// The decode step's small ops: argmax over rows of logits (rows x vocab, the output is rows
// int32) and element-wise add / mul over n elements.
template <typename T>
void add_argmax_case(std::vector<Case>& cases, size_t rows, size_t cols) {
  cases.push_back({"argmax", dtype_name<T>(), dims({rows, cols}), double(rows) * cols * sizeof(T) + 4.0 * rows, 0, "",
                   [=](const Device& dev, size_t sets) -> Runner {
                     auto xs = std::make_shared<std::vector<std::pair<Buffer<T>, Buffer<int32_t>>>>();
                     for (size_t s = 0; s < sets; ++s)
                       xs->push_back({random_buffer<T>(dev, rows * cols, -8, 8), dev.alloc<int32_t>(rows)});
                     return [=, &dev](size_t s) { quiver::ops::argmax(dev, (*xs)[s].first, (*xs)[s].second, rows, cols); };
                   }});
}
template <typename T>
void add_binary_cases(std::vector<Case>& cases, size_t n) {
  for (bool mul : {false, true})
    cases.push_back({mul ? "mul" : "add", dtype_name<T>(), dims({n}), 3.0 * n * sizeof(T), 0, "",
                     [=](const Device& dev, size_t sets) -> Runner {
                       struct Set { Buffer<T> a, b, out; };
                       auto xs = std::make_shared<std::vector<Set>>();
                       for (size_t s = 0; s < sets; ++s)
                         xs->push_back({random_buffer<T>(dev, n), random_buffer<T>(dev, n), dev.alloc<T>(n)});
                       return [=, &dev](size_t s) {
                         auto& v = (*xs)[s];
                         if (mul) quiver::ops::mul(dev, v.a, v.b, v.out, n);
                         else quiver::ops::add(dev, v.a, v.b, v.out, n);
                       };
                     }});
}

template <typename W>
void add_matvec_case(std::vector<Case>& cases, size_t rows, size_t cols) {
  std::string dt = dtype_name<W>();
  // x and y in the weights' type, as ops::matvec requires and as torch's `W @ v` (the anchor) runs.
  cases.push_back({"matvec", dt, dims({rows, cols}), double(rows) * cols * sizeof(W) + double(sizeof(W)) * (rows + cols),
                   2.0 * rows * cols, "gemv_" + dt + "_" + dims({rows, cols}) + "_GBps",
                   [=](const Device& dev, size_t sets) -> Runner {
                     struct Set { Buffer<W> w, x, y; };
                     auto xs = std::make_shared<std::vector<Set>>();
                     for (size_t s = 0; s < sets; ++s)
                       xs->push_back({random_buffer<W>(dev, rows * cols), random_buffer<W>(dev, cols), dev.alloc<W>(rows)});
                     return [=, &dev](size_t s) { quiver::ops::matvec(dev, (*xs)[s].w, (*xs)[s].x, (*xs)[s].y, rows, cols); };
                   }});
}

// 16-bit weights with f32 x and y (quiver-llm's F16 / BF16 matrices).
template <typename W>
void add_matvec_w16_case(std::vector<Case>& cases, size_t rows, size_t cols) {
  cases.push_back({"matvec_w16", dtype_name<W>(), dims({rows, cols}), double(rows) * cols * sizeof(W) + 4.0 * (rows + cols),
                   2.0 * rows * cols, "",
                   [=](const Device& dev, size_t sets) -> Runner {
                     struct Set { Buffer<W> w; Buffer<float> x, y; };
                     auto xs = std::make_shared<std::vector<Set>>();
                     for (size_t s = 0; s < sets; ++s)
                       xs->push_back({random_buffer<W>(dev, rows * cols), random_buffer<float>(dev, cols),
                                      dev.alloc<float>(rows)});
                     return [=, &dev](size_t s) { quiver::ops::matvec(dev, (*xs)[s].w, (*xs)[s].x, (*xs)[s].y, rows, cols); };
                   }});
}

// a8: int8 activations (matvec_q8_0r_a8 / q4_0r_a8 / q4_k_a8 / q6_kr_a8, x quantized once when the case is
// set up: a decode step quantizes a vector once for every product that reads it).
void add_quant_case(std::vector<Case>& cases, size_t rows, size_t cols, quiver::ops::detail::QuantFormat format,
                    bool a8 = false) {
  using quiver::ops::detail::QuantFormat;
  struct Layout {
    const char* name;
    size_t block_elems, block_bytes;
    std::vector<size_t> halves;   // byte offsets of the block's f16 scales
  };
  const Layout q = format == QuantFormat::Q8_0    ? Layout{"q8_0", 32, quiver::ops::kQ8_0BlockBytes, {0}}
                   : format == QuantFormat::Q4_0  ? Layout{"q4_0", 32, quiver::ops::kQ4_0BlockBytes, {0}}
                   : format == QuantFormat::Q8_0R ? Layout{"q8_0r", 32, quiver::ops::kQ8_0BlockBytes, {0}}
                   : format == QuantFormat::Q4_0R ? Layout{"q4_0r", 32, quiver::ops::kQ4_0BlockBytes, {0}}
                   : format == QuantFormat::Q4_K ? Layout{"q4_k", 256, quiver::ops::kQ4_KBlockBytes, {0, 2}}
                   : format == QuantFormat::Q6_KR ? Layout{"q6_kr", 256, quiver::ops::kQ6_KBlockBytes, {208}}
                                                 : Layout{"q6_k", 256, quiver::ops::kQ6_KBlockBytes, {208}};
  size_t wbytes = rows * (cols / q.block_elems) * q.block_bytes;
  double xbytes = a8 ? double(quiver::ops::activation_q8_bytes(cols)) : 4.0 * cols;
  cases.push_back({"matvec", std::string(q.name) + (a8 ? "_a8" : ""), dims({rows, cols}),
                   double(wbytes) + xbytes + 4.0 * rows, 2.0 * rows * cols, "",
                   [=](const Device& dev, size_t sets) -> Runner {
                     struct Set { Buffer<uint8_t> w; Buffer<float> x, y; Buffer<uint8_t> xq; };
                     auto xs = std::make_shared<std::vector<Set>>();
                     for (size_t s = 0; s < sets; ++s) {
                       // Random bytes with valid small f16 scales (1/64) in each block.
                       std::vector<uint8_t> w(wbytes);
                       std::uniform_int_distribution<int> byte(0, 255);
                       for (size_t i = 0; i < std::min<size_t>(wbytes, 1 << 20); ++i) w[i] = static_cast<uint8_t>(byte(rng()));
                       for (size_t i = 1 << 20; i < wbytes; ++i) w[i] = w[i % (1 << 20)];
                       for (size_t b = 0; b < wbytes; b += q.block_bytes)
                         for (size_t at : q.halves) { w[b + at] = 0x00; w[b + at + 1] = 0x24; }
                       if (format == QuantFormat::Q8_0R) w = quiver::ops::repack_q8_0(w, rows, cols);
                       if (format == QuantFormat::Q4_0R) w = quiver::ops::repack_q4_0(w, rows, cols);
                       if (format == QuantFormat::Q6_KR) w = quiver::ops::repack_q6_k(w, rows, cols);
                       Set set{dev.alloc<uint8_t>(wbytes), random_buffer<float>(dev, cols), dev.alloc<float>(rows)};
                       set.w.upload(w);
                       if (a8) {
                         set.xq = dev.alloc<uint8_t>(quiver::ops::activation_q8_bytes(cols));
                         quiver::ops::quantize_activations_q8(dev, set.x, set.xq, cols);
                       }
                       xs->push_back(std::move(set));
                     }
                     return [=, &dev](size_t s) {
                       auto& v = (*xs)[s];
                       quiver::ops::detail::matvec_quantized(dev, quiver::ops::detail::operand(v.w),
                                                             a8 ? quiver::ops::detail::operand(v.xq)
                                                                : quiver::ops::detail::operand(v.x),
                                                             quiver::ops::detail::operand(v.y), rows, cols, format);
                     };
                   }});
}

template <typename T>
void add_matmul_case(std::vector<Case>& cases, size_t n) {
  std::string dt = dtype_name<T>();
  cases.push_back({"matmul", dt, dims({n, n, n}), 3.0 * n * n * sizeof(T), 2.0 * n * n * n,
                   "gemm_" + dt + "_" + std::to_string(n) + "_TFLOPs",
                   [=](const Device& dev, size_t) -> Runner {   // compute-bound: one set
                     auto a = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n * n));
                     auto b = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n * n));
                     auto c = std::make_shared<Buffer<T>>(dev.alloc<T>(n * n));
                     return [=, &dev](size_t) { quiver::ops::matmul(dev, *a, *b, *c, n, n, n); };
                   }});
}

void add_w8a8_case(std::vector<Case>& cases, size_t n) {
  cases.push_back({"matmul_w8a8", "int8", dims({n, n, n}), 2.0 * n * n + 4.0 * n * n, 2.0 * n * n * n,
                   n == 8192 ? "gemm_int8_8192_TOPs" : "",
                   [=](const Device& dev, size_t) -> Runner {
                     std::vector<int8_t> host(n * n);
                     std::uniform_int_distribution<int> d(-127, 127);
                     for (auto& v : host) v = static_cast<int8_t>(d(rng()));
                     auto a = std::make_shared<Buffer<int8_t>>(dev.alloc<int8_t>(n * n));
                     auto b = std::make_shared<Buffer<int8_t>>(dev.alloc<int8_t>(n * n));
                     a->upload(host);
                     b->upload(host);
                     auto sa = std::make_shared<Buffer<float>>(random_buffer<float>(dev, n, 0.001f, 0.01f));
                     auto sb = std::make_shared<Buffer<float>>(random_buffer<float>(dev, n, 0.001f, 0.01f));
                     auto c = std::make_shared<Buffer<float>>(dev.alloc<float>(n * n));
                     return [=, &dev](size_t) { quiver::ops::matmul_w8a8(dev, *a, *b, *sa, *sb, *c, n, n, n); };
                   }});
}

template <typename T>
void add_attention_case(std::vector<Case>& cases, size_t b, size_t h, size_t s, size_t d, bool causal) {
  std::string dt = dtype_name<T>();
  std::string shape = "B" + std::to_string(b) + "H" + std::to_string(h) + "S" + std::to_string(s) + "D" + std::to_string(d);
  double flops = 4.0 * b * h * s * s * d * (causal ? 0.5 : 1.0);
  cases.push_back({causal ? "attention_causal" : "attention", dt, shape, 4.0 * b * h * s * d * sizeof(T), flops,
                   "sdpa_" + dt + "_" + shape + (causal ? "_causal" : "") + "_TFLOPs",
                   [=](const Device& dev, size_t) -> Runner {
                     size_t n = b * h * s * d;
                     auto q = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto k = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto v = std::make_shared<Buffer<T>>(random_buffer<T>(dev, n));
                     auto o = std::make_shared<Buffer<T>>(dev.alloc<T>(n));
                     quiver::ops::AttentionShape shape_;
                     shape_.batch = b;
                     shape_.q_heads = shape_.kv_heads = h;
                     shape_.q_len = shape_.kv_len = s;
                     shape_.head_dim = d;
                     shape_.causal = causal;
                     return [=, &dev](size_t) { quiver::ops::attention(dev, *q, *k, *v, *o, shape_); };
                   }});
}

}  // namespace

std::vector<Case> all_cases(bool quick) {
  using quiver::ops::detail::QuantFormat;
  std::vector<Case> cases;
  if (quick) {
    add_row_cases<float>(cases, 64, 256);
    add_row_cases<quiver::bf16>(cases, 64, 256);
    add_matvec_case<quiver::bf16>(cases, 256, 512);
    for (auto f : {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q4_K, QuantFormat::Q6_K})
      add_quant_case(cases, 256, 512, f);
    for (auto f : {QuantFormat::Q8_0R, QuantFormat::Q4_0R}) {
      add_quant_case(cases, 256, 2048, f);
      add_quant_case(cases, 256, 2048, f, /*a8=*/true);
    }
    for (auto f : {QuantFormat::Q4_K, QuantFormat::Q6_KR}) add_quant_case(cases, 256, 2048, f, /*a8=*/true);
    add_matmul_case<float>(cases, 128);
    add_matmul_case<quiver::bf16>(cases, 128);
    add_w8a8_case(cases, 128);
    add_attention_case<quiver::bf16>(cases, 1, 2, 128, 64, true);
    add_argmax_case<float>(cases, 2, 1000);
    add_binary_cases<float>(cases, 64 * 256);
    return cases;
  }
  for (auto [m, n] : {std::pair<size_t, size_t>{4096, 1024}, {8192, 4096}, {4096, 16384}, {32768, 4096}}) {
    add_row_cases<float>(cases, m, n);
    add_row_cases<quiver::bf16>(cases, m, n);
  }
  for (auto [r, c] : {std::pair<size_t, size_t>{4096, 4096}, {14336, 4096}}) {
    add_matvec_case<quiver::bf16>(cases, r, c);
    add_matvec_case<quiver::half>(cases, r, c);
    add_matvec_w16_case<quiver::bf16>(cases, r, c);
    for (auto f : {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q4_K, QuantFormat::Q6_K, QuantFormat::Q8_0R,
                   QuantFormat::Q4_0R})
      add_quant_case(cases, r, c, f);
    for (auto f : {QuantFormat::Q8_0R, QuantFormat::Q4_0R, QuantFormat::Q4_K, QuantFormat::Q6_KR})
      add_quant_case(cases, r, c, f, /*a8=*/true);
  }
  // The down projection's shape (the short, long rows a K split serves).
  for (auto f : {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q8_0R, QuantFormat::Q4_0R})
    add_quant_case(cases, 4096, 14336, f);
  for (auto f : {QuantFormat::Q8_0R, QuantFormat::Q4_0R, QuantFormat::Q4_K, QuantFormat::Q6_KR})
    add_quant_case(cases, 4096, 14336, f, /*a8=*/true);
  // The other products of a Llama-3-8B decode step: q, k, v stacked, and gate, up stacked.
  for (size_t r : {6144, 28672})
    for (auto f : {QuantFormat::Q8_0R, QuantFormat::Q4_0R, QuantFormat::Q4_K, QuantFormat::Q6_KR})
      add_quant_case(cases, r, 4096, f, /*a8=*/true);
  for (size_t n : {4096, 8192}) {
    add_matmul_case<quiver::bf16>(cases, n);
    add_matmul_case<quiver::half>(cases, n);
  }
  add_matmul_case<float>(cases, 4096);
  add_w8a8_case(cases, 8192);
  for (bool causal : {false, true}) add_attention_case<quiver::bf16>(cases, 4, 32, 4096, 128, causal);
  // Half as well: the cooperative-matrix kernels of Vulkan devices take half tiles only.
  for (bool causal : {false, true}) add_attention_case<quiver::half>(cases, 4, 32, 4096, 128, causal);
  add_attention_case<quiver::bf16>(cases, 1, 32, 8192, 64, false);
  // Greedy sampling over a Llama 3 vocabulary: one decode row, and a batch of 32.
  add_argmax_case<float>(cases, 1, 128256);
  add_argmax_case<float>(cases, 32, 128256);
  add_binary_cases<float>(cases, size_t{1} << 24);
  return cases;
}

// The CPU table's shapes (docs/perf/cpu.md, scripts/cpu-bench.py): sizes numpy handles in
// milliseconds on a few cores.
std::vector<Case> cpu_cases() {
  std::vector<Case> cases;
  add_row_cases<float>(cases, 2048, 4096);   // rms_norm, softmax
  add_row_cases<float>(cases, 4096, 1024);   // silu_gate over 4M elements (and all_cases' shape)
  add_matvec_case<float>(cases, 4096, 4096);
  add_matmul_case<float>(cases, 512);
  add_matmul_case<float>(cases, 1024);
  return cases;
}

}  // namespace quiver_bench
