// quiver::ops — the built-in op library: the operations an inference engine needs, each written
// once in the kernel language (kernels/*.cpp), compiled by quiverc into a fat binary embedded in
// libquiver and loaded on first use per Device. docs/ops.md describes every op; the numeric gate
// (tests/ops) checks each one against an fp64 oracle on every backend (docs/numerics.md).
//
//   quiver::Device dev = quiver::Device::open();
//   quiver::ops::rms_norm(dev, x, w, out, rows, cols, 1e-6f);
//   dev.synchronize();
//
// Conventions:
//  - Buffers are row-major and start at element 0. Activations and outputs must hold at least
//    the elements the shape needs; per-feature parameters (norm weights and biases, scales)
//    exactly that many. Outputs must not alias inputs (except where an op says so: add, mul).
//  - Element types: float, quiver::bf16 and quiver::half where the op lists them; one call
//    uses one element type for all its floating-point tensors unless stated.
//  - Wrong shapes, sizes or element types throw quiver::Error(ErrorCode::InvalidArgument) naming
//    the op and the argument, before anything is launched. A libquiver built without the
//    compiler (QUIVER_BUILD_COMPILER=OFF) has no op library: every op throws ErrorCode::NotFound.
//  - Ops are asynchronous like Kernel::launch: synchronize (or download) before reading results.
//  - Indices are 32-bit in the kernels: every tensor must have fewer than 2^32 elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <quiver/runtime.h>

namespace quiver::ops {

namespace detail {
// A Buffer argument with its element type erased, so each op is implemented once in libquiver
// and checks element types at run time with a message naming the argument.
struct Operand {
  quiver::detail::Elem elem = quiver::detail::Elem::U8;
  size_t size = 0;                                   // elements
  const quiver::detail::BufferImpl* buffer = nullptr;  // null for an empty (default) Buffer
};
template <typename T>
Operand operand(const Buffer<T>& b) {
  return Operand{quiver::detail::elem_of<T>(), b.size(), b.impl().get()};
}

void rms_norm(const Device&, Operand x, Operand w, Operand out, size_t rows, size_t cols, float eps);
void layer_norm(const Device&, Operand x, Operand w, Operand b, Operand out, size_t rows, size_t cols, float eps);
void add_rms_norm(const Device&, Operand x, Operand residual, Operand w, Operand sum, Operand out, size_t rows,
                  size_t cols, float eps);
void add_rms_norm_q8(const Device&, Operand x, Operand residual, Operand w, Operand sum, Operand out, Operand xq,
                     size_t rows, size_t cols, float eps);
void softmax(const Device&, Operand x, Operand out, size_t rows, size_t cols, bool log);
void silu_gate(const Device&, Operand x, Operand g, Operand out, size_t n);
void gelu(const Device&, Operand x, Operand out, size_t n, bool tanh_form);
void rope(const Device&, Operand x, Operand positions, Operand inv_freq, Operand out, size_t tokens, size_t heads,
          size_t head_dim, bool interleaved);
void embedding(const Device&, Operand table, Operand ids, Operand out, size_t tokens, size_t vocab, size_t dim);
void argmax(const Device&, Operand x, Operand out, size_t rows, size_t cols);
void topk(const Device&, Operand x, Operand values, Operand indices, size_t rows, size_t cols, size_t k);
void add(const Device&, Operand a, Operand b, Operand out, size_t n);
void mul(const Device&, Operand a, Operand b, Operand out, size_t n);
void convert(const Device&, Operand x, Operand out, size_t n);
void matvec(const Device&, Operand w, Operand x, Operand y, size_t rows, size_t cols);
// The weight block formats of the quantized matvecs (llama.cpp's ggml types of the same names).
// Q8_0R / Q4_0R: the same blocks in the repacked order of ops::repack_q8_0 / repack_q4_0;
// Q6_KR: q6_k super-blocks with their d moved behind the rest (ops::repack_q6_k).
enum class QuantFormat { Q8_0, Q4_0, Q4_K, Q6_K, Q8_0R, Q4_0R, Q6_KR };
void matvec_quantized(const Device&, Operand w, Operand x, Operand y, size_t rows, size_t cols, QuantFormat format);
void dequantize(const Device&, Operand w, Operand out, size_t rows, size_t cols, QuantFormat format);
void quantize_activations_q8(const Device&, Operand x, Operand xq, size_t n);
void matmul(const Device&, Operand a, Operand b, Operand c, size_t m, size_t n, size_t k, bool b_transposed);
void matmul_w8a8(const Device&, Operand a, Operand b, Operand a_scale, Operand b_scale, Operand c, size_t m,
                 size_t n, size_t k);
}  // namespace detail

// ---- Normalisation ---------------------------------------------------------------------------
// out[r, c] = x[r, c] * w[c] / sqrt(mean_c x[r, c]^2 + eps). x, out: rows x cols; w: cols.
template <typename X, typename W, typename O>
void rms_norm(const Device& dev, const Buffer<X>& x, const Buffer<W>& w, const Buffer<O>& out, size_t rows,
              size_t cols, float eps = 1e-6f) {
  detail::rms_norm(dev, detail::operand(x), detail::operand(w), detail::operand(out), rows, cols, eps);
}

// out[r, c] = (x[r, c] - mean_r) / sqrt(var_r + eps) * w[c] + b[c] (biased variance).
template <typename X, typename W, typename B, typename O>
void layer_norm(const Device& dev, const Buffer<X>& x, const Buffer<W>& w, const Buffer<B>& b, const Buffer<O>& out,
                size_t rows, size_t cols, float eps = 1e-5f) {
  detail::layer_norm(dev, detail::operand(x), detail::operand(w), detail::operand(b), detail::operand(out), rows,
                     cols, eps);
}

// Residual add fused with rms_norm: sum = x + residual (rounded to the element type: the next
// layer's residual), out = rms_norm(sum) * w. Two outputs, both rows x cols.
template <typename X, typename R, typename W, typename S, typename O>
void add_rms_norm(const Device& dev, const Buffer<X>& x, const Buffer<R>& residual, const Buffer<W>& w,
                  const Buffer<S>& sum, const Buffer<O>& out, size_t rows, size_t cols, float eps = 1e-6f) {
  detail::add_rms_norm(dev, detail::operand(x), detail::operand(residual), detail::operand(w), detail::operand(sum),
                       detail::operand(out), rows, cols, eps);
}

// The same for float rows that also writes out as int8 activations, exactly as
// quantize_activations_q8(out) would (below): xq holds rows x activation_q8_bytes(cols) bytes,
// row r from byte r * activation_q8_bytes(cols); cols a multiple of 32. A decode step's norm and
// the input of the int8-activation products after it (matvec_q4_0r_a8 / q8_0r_a8) in one launch.
inline void add_rms_norm_q8(const Device& dev, const Buffer<float>& x, const Buffer<float>& residual,
                            const Buffer<float>& w, const Buffer<float>& sum, const Buffer<float>& out,
                            const Buffer<uint8_t>& xq, size_t rows, size_t cols, float eps = 1e-6f) {
  detail::add_rms_norm_q8(dev, detail::operand(x), detail::operand(residual), detail::operand(w), detail::operand(sum),
                          detail::operand(out), detail::operand(xq), rows, cols, eps);
}

// ---- Softmax (per row, max-subtracted) --------------------------------------------------------
template <typename X, typename O>
void softmax(const Device& dev, const Buffer<X>& x, const Buffer<O>& out, size_t rows, size_t cols) {
  detail::softmax(dev, detail::operand(x), detail::operand(out), rows, cols, false);
}
template <typename X, typename O>
void log_softmax(const Device& dev, const Buffer<X>& x, const Buffer<O>& out, size_t rows, size_t cols) {
  detail::softmax(dev, detail::operand(x), detail::operand(out), rows, cols, true);
}

// ---- Activations (element-wise over n elements) ------------------------------------------------
// out = silu(x) * g = x / (1 + exp(-x)) * g (the SwiGLU gate).
template <typename X, typename G, typename O>
void silu_gate(const Device& dev, const Buffer<X>& x, const Buffer<G>& g, const Buffer<O>& out, size_t n) {
  detail::silu_gate(dev, detail::operand(x), detail::operand(g), detail::operand(out), n);
}

enum class GeluForm {
  Erf,    // 0.5 x (1 + erf(x / sqrt 2))
  Tanh,   // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};
template <typename X, typename O>
void gelu(const Device& dev, const Buffer<X>& x, const Buffer<O>& out, size_t n, GeluForm form = GeluForm::Erf) {
  detail::gelu(dev, detail::operand(x), detail::operand(out), n, form == GeluForm::Tanh);
}

// ---- Rotary position embedding -------------------------------------------------------------------
enum class RopeStyle {
  NeoX,   // GPT-NeoX / Llama: element i pairs with i + rotary_dim / 2
  GptJ,   // GPT-J: element 2i pairs with 2i + 1
};
// Pair i of the first rotary_dim elements of every head rotates by the angle
// positions[token] * inv_freq[i] (an f32 product, as in the usual f32 implementations);
// rotary_dim = 2 * inv_freq.size() <= head_dim, the remaining elements are copied.
// x, out: [tokens][heads][head_dim]; positions: int32, one per token; inv_freq: float.
template <typename X, typename O>
void rope(const Device& dev, const Buffer<X>& x, const Buffer<int32_t>& positions, const Buffer<float>& inv_freq,
          const Buffer<O>& out, size_t tokens, size_t heads, size_t head_dim, RopeStyle style = RopeStyle::NeoX) {
  detail::rope(dev, detail::operand(x), detail::operand(positions), detail::operand(inv_freq), detail::operand(out),
               tokens, heads, head_dim, style == RopeStyle::GptJ);
}
// The standard frequencies base^(-2i / rotary_dim), i < rotary_dim / 2, computed in double and
// rounded to float (scaled variants such as Llama 3's are the caller's own table).
std::vector<float> rope_inv_freq(size_t rotary_dim, double base = 10000.0);

// ---- Embedding gather ------------------------------------------------------------------------------
// out[t, :] = table[ids[t], :] for t < tokens; table: vocab x dim; an id outside [0, vocab)
// yields a row of zeros.
template <typename T, typename O>
void embedding(const Device& dev, const Buffer<T>& table, const Buffer<int32_t>& ids, const Buffer<O>& out,
               size_t tokens, size_t vocab, size_t dim) {
  detail::embedding(dev, detail::operand(table), detail::operand(ids), detail::operand(out), tokens, vocab, dim);
}

// ---- Argmax (greedy sampling) -----------------------------------------------------------------------
// out[r] = the column of the largest element of row r of x (rows x cols), on the device, so a
// decode loop never downloads its logits. Of equal maxima the lowest column wins; -0 equals +0;
// NaN ranks above every number (as torch.argmax): a row holding NaN gives its first NaN's column.
// out: rows int32 (the type embedding's ids take).
template <typename X>
void argmax(const Device& dev, const Buffer<X>& x, const Buffer<int32_t>& out, size_t rows, size_t cols) {
  detail::argmax(dev, detail::operand(x), detail::operand(out), rows, cols);
}

// The k largest elements of each row of x (rows x cols), largest first, in argmax's order (NaN
// above every number, -0 equal to +0, equal elements by increasing column): values (rows x k, x's
// type) and their columns, indices (rows x k, int32). 1 <= k <= cols. The candidates of top-k
// sampling, chosen on the device; the kernel reads the row k times (meant for small k).
template <typename X, typename V>
void topk(const Device& dev, const Buffer<X>& x, const Buffer<V>& values, const Buffer<int32_t>& indices, size_t rows,
          size_t cols, size_t k) {
  detail::topk(dev, detail::operand(x), detail::operand(values), detail::operand(indices), rows, cols, k);
}

// ---- Element-wise arithmetic (n elements) --------------------------------------------------------
// out = a + b and out = a * b, in float, rounded once to the element type. Unlike the other ops,
// out may be the same Buffer as a or b (an in-place residual add).
template <typename A, typename B, typename O>
void add(const Device& dev, const Buffer<A>& a, const Buffer<B>& b, const Buffer<O>& out, size_t n) {
  detail::add(dev, detail::operand(a), detail::operand(b), detail::operand(out), n);
}
template <typename A, typename B, typename O>
void mul(const Device& dev, const Buffer<A>& a, const Buffer<B>& b, const Buffer<O>& out, size_t n) {
  detail::mul(dev, detail::operand(a), detail::operand(b), detail::operand(out), n);
}

// ---- Element type conversion (n elements) --------------------------------------------------------
// out = x in out's element type (float, bf16, half; x's and out's types differ), rounded once to
// nearest even: what a 16-bit matrix product's inputs go through (quiver-llm's prefill).
template <typename X, typename O>
void convert(const Device& dev, const Buffer<X>& x, const Buffer<O>& out, size_t n) {
  detail::convert(dev, detail::operand(x), detail::operand(out), n);
}

// ---- Matrix-vector (decode) ---------------------------------------------------------------------------
// y[r] = sum_c w[r, c] x[c]; w: rows x cols (a linear layer's out x in weight), float accumulation.
// x and y have w's element type, or are float with 16-bit (bf16, half) weights: the weights are
// widened exactly, and the result is stored as float.
template <typename W, typename X, typename Y>
void matvec(const Device& dev, const Buffer<W>& w, const Buffer<X>& x, const Buffer<Y>& y, size_t rows, size_t cols) {
  detail::matvec(dev, detail::operand(w), detail::operand(x), detail::operand(y), rows, cols);
}

// Block-quantized weights in llama.cpp's layouts, each row cols / 32 blocks (q8_0, q4_0; cols a
// multiple of 32) or cols / 256 super-blocks (q4_k, q6_k; cols a multiple of 256); w: the bytes
// (e.g. a GGUF tensor's data as it is), x: cols floats, y: rows floats.
constexpr size_t kQuantBlock = 32;
constexpr size_t kQ8_0BlockBytes = 34;
constexpr size_t kQ4_0BlockBytes = 18;
constexpr size_t kQuantSuperBlock = 256;
constexpr size_t kQ4_KBlockBytes = 144;
constexpr size_t kQ6_KBlockBytes = 210;
constexpr size_t q8_0_bytes(size_t rows, size_t cols) { return rows * (cols / kQuantBlock) * kQ8_0BlockBytes; }
constexpr size_t q4_0_bytes(size_t rows, size_t cols) { return rows * (cols / kQuantBlock) * kQ4_0BlockBytes; }
constexpr size_t q4_k_bytes(size_t rows, size_t cols) { return rows * (cols / kQuantSuperBlock) * kQ4_KBlockBytes; }
constexpr size_t q6_k_bytes(size_t rows, size_t cols) { return rows * (cols / kQuantSuperBlock) * kQ6_KBlockBytes; }
namespace detail {
inline void matvec_blocks(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                          size_t rows, size_t cols, QuantFormat format) {
  matvec_quantized(dev, operand(w), operand(x), operand(y), rows, cols, format);
}
}  // namespace detail
// q8_0: 34-byte blocks: f16 scale d, 32 int8 q; w = d q.
inline void matvec_q8_0(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                        size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q8_0); }
// q4_0: 18-byte blocks: f16 d, 16 bytes of nibbles (element j low nibble, element j + 16 high
// nibble); w = d (nibble - 8).
inline void matvec_q4_0(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                        size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q4_0); }
// q4_k: 144-byte super-blocks: f16 d, f16 dmin, 12 bytes packing eight 6-bit (scale, min) pairs,
// 128 bytes of nibbles; element 64c + i (i < 32) of sub-block s = 2c is the low nibble of nibble
// byte 32c + i, element 64c + 32 + i (s = 2c + 1) its high nibble; w = d scale_s nibble -
// dmin min_s (docs/ops.md has the scale packing).
inline void matvec_q4_k(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                        size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q4_K); }
// q6_k: 210-byte super-blocks: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8
// scales (one per 16 elements), f16 d; w = d scale (q - 32) (docs/ops.md has the element order).
inline void matvec_q6_k(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                        size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q6_K); }

// The same weights dequantized into a rows x cols matrix of float, bf16 or half (each element
// formed in float, rounded once to out's type): for matrix products over many tokens (a prompt),
// where a 16-bit matmul on the matrix units beats a matvec per token.
template <typename O>
void dequantize_q8_0(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q8_0); }
template <typename O>
void dequantize_q4_0(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q4_0); }
template <typename O>
void dequantize_q4_k(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q4_K); }
template <typename O>
void dequantize_q6_k(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q6_K); }

// Repacked q4_0 / q8_0: the same blocks reordered once on the host (repack_q4_0 / repack_q8_0,
// from a GGUF tensor's bytes; the result has the same size) so that the matvec reads them in
// 16-byte loads: the quants of every row, then every block's f16 scale (docs/ops.md has the
// order; q4_0's nibbles are stored as q XOR 8). cols must be a multiple of kRepackCols (a row is
// whole chunks of 32 blocks); the values, and so every result, are those of the GGUF blocks (matvec_q4_0r computes what
// matvec_q4_0 does, to the float dot product's rounding).
constexpr size_t kRepackCols = 1024;
std::vector<uint8_t> repack_q4_0(std::span<const uint8_t> blocks, size_t rows, size_t cols);
std::vector<uint8_t> repack_q8_0(std::span<const uint8_t> blocks, size_t rows, size_t cols);
inline void matvec_q4_0r(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                         size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q4_0R); }
inline void matvec_q8_0r(const Device& dev, const Buffer<uint8_t>& w, const Buffer<float>& x, const Buffer<float>& y,
                         size_t rows, size_t cols) { detail::matvec_blocks(dev, w, x, y, rows, cols, detail::QuantFormat::Q8_0R); }
template <typename O>
void dequantize_q4_0r(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q4_0R); }
template <typename O>
void dequantize_q8_0r(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q8_0R); }

// int8 activations for the repacked matvecs: x (n floats, n a multiple of 32) quantized per
// 32-element block as llama.cpp quantizes the activations of its integer-dot matvecs, d = max|x| /
// 127, q = x / d rounded to nearest (ties away from zero; q = 0 in a block of zeros), into xq:
// the n int8 q, then the n / 32 float d (activation_q8_bytes(n) bytes). matvec_q4_0r_a8 /
// q8_0r_a8 then compute sum_c w[r, c] (d q)[c] with exact integer dot products a block at a time
// (dp4a / OpSDot where the target has them) and one float scaling per block: the activations are
// rounded to 8 bits (a relative error of up to 1/254 of the block's max|x| per element; numerics
// in docs/numerics.md), the weights' bytes are read once per product and quantizing x costs one
// short launch, so a decode step quantizes each input vector once for the products that share it.
constexpr size_t activation_q8_bytes(size_t n) { return n + n / kQuantBlock * sizeof(float); }
inline void quantize_activations_q8(const Device& dev, const Buffer<float>& x, const Buffer<uint8_t>& xq, size_t n) {
  detail::quantize_activations_q8(dev, detail::operand(x), detail::operand(xq), n);
}
inline void matvec_q4_0r_a8(const Device& dev, const Buffer<uint8_t>& w, const Buffer<uint8_t>& xq,
                            const Buffer<float>& y, size_t rows, size_t cols) {
  detail::matvec_quantized(dev, detail::operand(w), detail::operand(xq), detail::operand(y), rows, cols,
                           detail::QuantFormat::Q4_0R);
}
inline void matvec_q8_0r_a8(const Device& dev, const Buffer<uint8_t>& w, const Buffer<uint8_t>& xq,
                            const Buffer<float>& y, size_t rows, size_t cols) {
  detail::matvec_quantized(dev, detail::operand(w), detail::operand(xq), detail::operand(y), rows, cols,
                           detail::QuantFormat::Q8_0R);
}

// The K-quants on int8 activations (xq as quantize_activations_q8 writes it for n = cols), the
// same sum with each sub-block's integer dot products exact and scaled once (docs/numerics.md):
// matvec_q4_k_a8 on q4_k tensors as GGUF stores them (144-byte super-blocks are whole 16-byte
// words already); matvec_q6_kr_a8 on repack_q6_k's bytes: every super-block's first 208 bytes
// (ql, qh, scales), then every f16 d, the same size as the GGUF tensor, so that the 16-byte words
// are aligned (210-byte super-blocks allow 16-bit loads only). dequantize_q6_kr reads the same
// bytes; q6_kr has no float-activation product (matvec_q6_k reads the GGUF order).
inline void matvec_q4_k_a8(const Device& dev, const Buffer<uint8_t>& w, const Buffer<uint8_t>& xq,
                           const Buffer<float>& y, size_t rows, size_t cols) {
  detail::matvec_quantized(dev, detail::operand(w), detail::operand(xq), detail::operand(y), rows, cols,
                           detail::QuantFormat::Q4_K);
}
std::vector<uint8_t> repack_q6_k(std::span<const uint8_t> blocks, size_t rows, size_t cols);
inline void matvec_q6_kr_a8(const Device& dev, const Buffer<uint8_t>& w, const Buffer<uint8_t>& xq,
                            const Buffer<float>& y, size_t rows, size_t cols) {
  detail::matvec_quantized(dev, detail::operand(w), detail::operand(xq), detail::operand(y), rows, cols,
                           detail::QuantFormat::Q6_KR);
}
template <typename O>
void dequantize_q6_kr(const Device& dev, const Buffer<uint8_t>& w, const Buffer<O>& out, size_t rows, size_t cols)
  { detail::dequantize(dev, detail::operand(w), detail::operand(out), rows, cols, detail::QuantFormat::Q6_KR); }

// ---- Matrix products ------------------------------------------------------------------------------------
// c[m x n] = a[m x k] * b[k x n]
template <typename A, typename B, typename C>
void matmul(const Device& dev, const Buffer<A>& a, const Buffer<B>& b, const Buffer<C>& c, size_t m, size_t n,
            size_t k) {
  detail::matmul(dev, detail::operand(a), detail::operand(b), detail::operand(c), m, n, k, false);
}
// c[m x n] = a[m x k] * b[n x k]^T (b is a linear layer's out x in weight)
template <typename A, typename B, typename C>
void matmul_nt(const Device& dev, const Buffer<A>& a, const Buffer<B>& b, const Buffer<C>& c, size_t m, size_t n,
               size_t k) {
  detail::matmul(dev, detail::operand(a), detail::operand(b), detail::operand(c), m, n, k, true);
}
// int8 x int8 with exact int32 accumulation, then per-row / per-column scales:
// c[i, j] = (float(sum_k a[i, k] b[j, k]) * a_scale[i]) * b_scale[j]; a: m x k, b: n x k
// (int8, row-major), a_scale: m floats, b_scale: n floats, c: m x n floats. k <= 131072 so the
// int32 sum cannot overflow.
inline void matmul_w8a8(const Device& dev, const Buffer<int8_t>& a, const Buffer<int8_t>& b,
                        const Buffer<float>& a_scale, const Buffer<float>& b_scale, const Buffer<float>& c, size_t m,
                        size_t n, size_t k) {
  detail::matmul_w8a8(dev, detail::operand(a), detail::operand(b), detail::operand(a_scale),
                      detail::operand(b_scale), detail::operand(c), m, n, k);
}

// ---- Attention -----------------------------------------------------------------------------------------
enum class AttentionLayout {
  BHSD,   // [batch][heads][seq][head_dim]
  BSHD,   // [batch][seq][heads][head_dim]
};
struct AttentionShape {
  size_t batch = 1;
  size_t q_heads = 0;
  size_t kv_heads = 0;       // divides q_heads (grouped-query attention; = q_heads for MHA)
  size_t q_len = 0;          // queries: the last q_len positions of the KV sequence
  size_t kv_len = 0;         // KV positions attended to (>= q_len when causal)
  size_t head_dim = 0;       // 64 or 128
  size_t kv_capacity = 0;    // positions the k / v buffers are laid out for (a KV cache); 0 = kv_len
  AttentionLayout layout = AttentionLayout::BHSD;   // of q, o and k, v alike
  bool causal = false;       // key j visible to query i when j <= kv_len - q_len + i
  float scale = 0.0f;        // 0 = 1 / sqrt(head_dim)
};
namespace detail {
void attention(const Device&, Operand q, Operand k, Operand v, Operand o, const AttentionShape& shape);
}
// o = softmax(scale * q k^T [+ causal mask]) v, flash style (online softmax, never storing the
// score matrix). q, o: batch x q_heads x q_len x head_dim; k, v: batch x kv_heads x kv_capacity x
// head_dim, in the layout named.
template <typename Q, typename K, typename V, typename O>
void attention(const Device& dev, const Buffer<Q>& q, const Buffer<K>& k, const Buffer<V>& v, const Buffer<O>& o,
               const AttentionShape& shape) {
  detail::attention(dev, detail::operand(q), detail::operand(k), detail::operand(v), detail::operand(o), shape);
}

// ---- KV cache -----------------------------------------------------------------------------------------
// A KV cache as attention reads it (AttentionShape's k / v with kv_capacity): batch x kv_heads x
// kv_capacity x head_dim in the layout named.
struct KvCacheShape {
  size_t batch = 1;
  size_t kv_heads = 0;
  size_t head_dim = 0;
  size_t kv_capacity = 0;
  AttentionLayout layout = AttentionLayout::BHSD;
};
namespace detail {
void kv_append(const Device&, Operand src, Operand position, Operand cache, size_t tokens, const KvCacheShape& shape);
}
// Appends `tokens` new rows per sequence: cache position position[b] + t of sequence b receives
// src[b][t] (src: batch x tokens x kv_heads x head_dim, the layout of a K or V projection's
// output), every head. The position is read on the device (position: int32, one per sequence),
// so a recorded decode step replays with the position advanced in device memory. The host checks
// the shapes and that tokens <= kv_capacity; the kernel checks the position it reads (which the
// host never sees): a sequence whose position is negative writes nothing, and rows at
// position[b] + t >= kv_capacity are skipped, so nothing is ever written outside the cache.
template <typename S, typename C>
void kv_append(const Device& dev, const Buffer<S>& src, const Buffer<int32_t>& position, const Buffer<C>& cache,
               size_t tokens, const KvCacheShape& shape) {
  detail::kv_append(dev, detail::operand(src), detail::operand(position), detail::operand(cache), tokens, shape);
}

// ---- Decoding attention ------------------------------------------------------------------------------
// One new query per sequence against a KV cache whose length is read on the device: query b
// (q, o: batch x q_heads x head_dim) attends to cache positions 0 .. position[b] (int32, one per
// sequence; the position of the query itself, whose K and V kv_append has written), so a
// recorded decode step (Device::record) replays unchanged while the position advances in device
// memory. The keys are split into chunks of attention_decode_chunk() run in parallel and
// combined (flash decoding); `workspace` (float, attention_decode_workspace() elements) holds
// the chunks' partial results. A position at or past kv_capacity attends to the whole cache; a
// negative one writes zeros. q_heads / kv_heads query heads share a KV head; head_dim 64 or 128.
constexpr size_t attention_decode_chunk() { return 64; }
constexpr size_t attention_decode_workspace(size_t q_heads, const KvCacheShape& cache) {
  return cache.batch * q_heads * ((cache.kv_capacity + attention_decode_chunk() - 1) / attention_decode_chunk()) *
         (cache.head_dim + 2);
}
namespace detail {
// o_q8: empty, or a uint8 buffer for o as int8 activations (attention_decode_q8).
void attention_decode(const Device&, Operand q, Operand k, Operand v, Operand position, Operand o, Operand workspace,
                      size_t q_heads, const KvCacheShape& cache, float scale, Operand o_q8 = {});
}
template <typename Q, typename K, typename V, typename O>
void attention_decode(const Device& dev, const Buffer<Q>& q, const Buffer<K>& k_cache, const Buffer<V>& v_cache,
                      const Buffer<int32_t>& position, const Buffer<O>& o, const Buffer<float>& workspace,
                      size_t q_heads, const KvCacheShape& cache, float scale = 0.0f) {
  detail::attention_decode(dev, detail::operand(q), detail::operand(k_cache), detail::operand(v_cache),
                           detail::operand(position), detail::operand(o), detail::operand(workspace), q_heads, cache,
                           scale);
}
// attention_decode with float q, caches and o that also writes o as int8 activations, exactly as
// quantize_activations_q8(o) would (row b of batch * q_heads * head_dim outputs from byte
// b * activation_q8_bytes(q_heads * head_dim)): the input of an int8-activation product after it
// (matvec_q8_0r_a8 / q4_0r_a8, a decode step's output projection) without a launch of its own.
inline void attention_decode_q8(const Device& dev, const Buffer<float>& q, const Buffer<float>& k_cache,
                                const Buffer<float>& v_cache, const Buffer<int32_t>& position, const Buffer<float>& o,
                                const Buffer<uint8_t>& o_q8, const Buffer<float>& workspace, size_t q_heads,
                                const KvCacheShape& cache, float scale = 0.0f) {
  detail::attention_decode(dev, detail::operand(q), detail::operand(k_cache), detail::operand(v_cache),
                           detail::operand(position), detail::operand(o), detail::operand(workspace), q_heads, cache,
                           scale, detail::operand(o_q8));
}

// The embedded op library as a Module (loaded on first use per Device), for listing or
// launching its kernels directly; throws ErrorCode::NotFound when libquiver has none.
Module library(const Device& dev);
// Whether this libquiver has the op library built in.
bool library_built_in() noexcept;
// The embedded op library's .qfb bytes (empty when there is none): for quiver-dump-style
// inspection, saving it to a file, or timing Device::load.
std::span<const std::byte> library_fatbin() noexcept;

}  // namespace quiver::ops
