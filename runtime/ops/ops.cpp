// quiver::ops entry points: check every argument (messages name the op and the argument), pick
// the kernel instantiation for the element type, launch. The kernels are kernels/*.cpp.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launch_shapes.h"
#include "ops/op_call.h"
#include "quiver/ops.h"

namespace quiver::ops::detail {

namespace {

// The element types the floating-point ops are instantiated for (kernels/*.cpp).
constexpr std::initializer_list<Elem> kFloatTypes = {Elem::F32, Elem::BF16, Elem::F16};

Elem float_elem(const OpCall& call, const char* name, const Operand& o) {
  return call.require_elem(name, o, kFloatTypes);
}

std::string kernel_name(const char* base, Elem e) { return std::string(base) + "<" + elem_name(e) + ">"; }

void require_eps(const OpCall& call, float eps) {
  if (!(eps >= 0.0f) || !std::isfinite(eps)) call.fail("eps = " + std::to_string(eps) + " must be finite and >= 0");
}

// kernels/common.h ("Short rows"): rows of at most 1024 elements that start on 16-byte
// boundaries go a subgroup each, 8 rows per block, in the `_short` kernels; other rows a block
// each.
constexpr size_t kShortRowCols = 1024, kShortRows = 8;
bool short_rows(Elem e, size_t cols) { return cols <= kShortRowCols && cols % chunk_elems(e) == 0; }
// The kernel for these rows: `base` or its short-row form `base`_short.
std::string row_kernel(const char* base, Elem e, size_t cols) {
  return kernel_name((std::string(base) + (short_rows(e, cols) ? "_short" : "")).c_str(), e);
}
Grid row_op_grid(const OpCall& call, Elem e, size_t rows, size_t cols) {
  return call.row_grid(short_rows(e, cols) ? (rows + kShortRows - 1) / kShortRows : rows);
}

}  // namespace

void rms_norm(const Device& dev, Operand x, Operand w, Operand out, size_t rows, size_t cols, float eps) {
  OpCall call(dev, "rms_norm");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("w", w, "x", x);
  call.require_same_elem("out", out, "x", x);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_exactly("w", w, cols, "cols");
  call.require_at_least("out", out, n, "rows * cols");
  require_eps(call, eps);
  if (n == 0) return;
  // The CPU image's own f32 kernel (kernels/rows_cpu.cpp: a thread per row, 8-wide loops).
  if (e == Elem::F32 && call.has_kernel("rms_norm_cpu")) {
    call.launch("rms_norm_cpu", call.row_grid(rows), {x, w, out, call.dim(rows, "rows"), call.dim(cols, "cols"), eps});
    return;
  }
  call.launch(row_kernel("rms_norm", e, cols), row_op_grid(call, e, rows, cols),
              {x, w, out, call.dim(rows, "rows"), call.dim(cols, "cols"), eps});
}

void layer_norm(const Device& dev, Operand x, Operand w, Operand b, Operand out, size_t rows, size_t cols,
                float eps) {
  OpCall call(dev, "layer_norm");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("w", w, "x", x);
  call.require_same_elem("b", b, "x", x);
  call.require_same_elem("out", out, "x", x);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_exactly("w", w, cols, "cols");
  call.require_exactly("b", b, cols, "cols");
  call.require_at_least("out", out, n, "rows * cols");
  require_eps(call, eps);
  if (n == 0) return;
  call.launch(row_kernel("layer_norm", e, cols), row_op_grid(call, e, rows, cols),
              {x, w, b, out, call.dim(rows, "rows"), call.dim(cols, "cols"), eps});
}

namespace {
// add_rms_norm's operands (one element type for all); returns that type.
Elem require_add_rms_norm(const OpCall& call, Operand x, Operand residual, Operand w, Operand sum, Operand out,
                          size_t rows, size_t cols, float eps) {
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("residual", residual, "x", x);
  call.require_same_elem("w", w, "x", x);
  call.require_same_elem("sum", sum, "x", x);
  call.require_same_elem("out", out, "x", x);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_at_least("residual", residual, n, "rows * cols");
  call.require_exactly("w", w, cols, "cols");
  call.require_at_least("sum", sum, n, "rows * cols");
  call.require_at_least("out", out, n, "rows * cols");
  require_eps(call, eps);
  return e;
}
}  // namespace

void add_rms_norm(const Device& dev, Operand x, Operand residual, Operand w, Operand sum, Operand out, size_t rows,
                  size_t cols, float eps) {
  OpCall call(dev, "add_rms_norm");
  Elem e = require_add_rms_norm(call, x, residual, w, sum, out, rows, cols, eps);
  size_t n = rows * cols;
  if (n == 0) return;
  // The CPU image's own f32 kernel (kernels/rows_cpu.cpp), as for rms_norm.
  const bool cpu_kernel = e == Elem::F32 && call.has_kernel("add_rms_norm_cpu");
  call.launch(cpu_kernel ? "add_rms_norm_cpu" : kernel_name("add_rms_norm", e), call.row_grid(rows),
              {x, residual, w, sum, out, call.dim(rows, "rows"), call.dim(cols, "cols"), eps});
}

void add_rms_norm_q8(const Device& dev, Operand x, Operand residual, Operand w, Operand sum, Operand out, Operand xq,
                     size_t rows, size_t cols, float eps) {
  OpCall call(dev, "add_rms_norm_q8");
  call.require_elem("x", x, {Elem::F32});
  require_add_rms_norm(call, x, residual, w, sum, out, rows, cols, eps);
  call.require_elem("xq", xq, {Elem::U8});
  if (cols % kQuantBlock != 0)
    call.fail("cols = " + std::to_string(cols) + " is not a multiple of the 32-element quantization block");
  size_t n = rows * cols;
  size_t xq_bytes = call.elements({rows, activation_q8_bytes(cols)}, "rows * (cols + cols / 32 * 4)");
  call.require_at_least("xq", xq, xq_bytes, "rows * (cols + cols / 32 * 4) bytes");
  if (n == 0) return;
  // kernels/norms.cpp: the quants as words, the scales as float, one buffer.
  Operand words{Elem::U32, xq.size / 4, xq.buffer}, scales{Elem::F32, xq.size / 4, xq.buffer};
  // kernels/norms.cpp: rows of up to 4096 take the 1024-thread kernel where the image has it.
  const bool wide = cols <= 4096 && call.has_kernel("add_rms_norm_q8_wide");
  call.launch(wide ? "add_rms_norm_q8_wide" : "add_rms_norm_q8", call.row_grid(rows),
              {x, residual, w, sum, out, words, scales, call.dim(rows, "rows"), call.dim(cols, "cols"), eps});
}

void softmax(const Device& dev, Operand x, Operand out, size_t rows, size_t cols, bool log) {
  OpCall call(dev, log ? "log_softmax" : "softmax");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("out", out, "x", x);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_at_least("out", out, n, "rows * cols");
  if (n == 0) return;
  // The CPU image's own f32 kernels (kernels/rows_cpu.cpp: a thread per row, 8-wide loops).
  const char* cpu_kernel = log ? "log_softmax_cpu" : "softmax_cpu";
  if (e == Elem::F32 && call.has_kernel(cpu_kernel)) {
    call.launch(cpu_kernel, call.row_grid(rows), {x, out, call.dim(rows, "rows"), call.dim(cols, "cols")});
    return;
  }
  call.launch(row_kernel(log ? "log_softmax" : "softmax", e, cols), row_op_grid(call, e, rows, cols),
              {x, out, call.dim(rows, "rows"), call.dim(cols, "cols")});
}

namespace {
// An element-wise op of two inputs named a_name and b_name (kernels/elementwise.cpp,
// kernels/decode.cpp: grid-stride over 16-byte chunks): kernel<T>(a, b, out, n).
void binary_elementwise(const Device& dev, const char* op, const char* a_name, Operand a, const char* b_name,
                        Operand b, Operand out, size_t n) {
  OpCall call(dev, op);
  Elem e = float_elem(call, a_name, a);
  call.require_same_elem(b_name, b, a_name, a);
  call.require_same_elem("out", out, a_name, a);
  n = call.elements({n}, "n");
  call.require_at_least(a_name, a, n, "n");
  call.require_at_least(b_name, b, n, "n");
  call.require_at_least("out", out, n, "n");
  if (n == 0) return;
  call.launch(kernel_name(op, e), stride_grid((n + chunk_elems(e) - 1) / chunk_elems(e)), {a, b, out, call.dim(n, "n")});
}
}  // namespace

void convert(const Device& dev, Operand x, Operand out, size_t n) {
  OpCall call(dev, "convert");
  Elem from = float_elem(call, "x", x), to = float_elem(call, "out", out);
  if (from == to) call.fail("x and out are both " + elem_name(from) + ": there is nothing to convert");
  n = call.elements({n}, "n");
  call.require_at_least("x", x, n, "n");
  call.require_at_least("out", out, n, "n");
  if (n == 0) return;
  // kernels/elementwise.cpp: eight elements per thread and step.
  call.launch("convert<" + elem_name(from) + ", " + elem_name(to) + ">", stride_grid((n + 7) / 8),
              {x, out, call.dim(n, "n")});
}

void silu_gate(const Device& dev, Operand x, Operand g, Operand out, size_t n) {
  binary_elementwise(dev, "silu_gate", "x", x, "g", g, out, n);
}
void add(const Device& dev, Operand a, Operand b, Operand out, size_t n) {
  binary_elementwise(dev, "add", "a", a, "b", b, out, n);
}
void mul(const Device& dev, Operand a, Operand b, Operand out, size_t n) {
  binary_elementwise(dev, "mul", "a", a, "b", b, out, n);
}

void gelu(const Device& dev, Operand x, Operand out, size_t n, bool tanh_form) {
  OpCall call(dev, "gelu");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("out", out, "x", x);
  n = call.elements({n}, "n");
  call.require_at_least("x", x, n, "n");
  call.require_at_least("out", out, n, "n");
  if (n == 0) return;
  call.launch(kernel_name(tanh_form ? "gelu_tanh" : "gelu_erf", e),
              stride_grid((n + chunk_elems(e) - 1) / chunk_elems(e)),
              {x, out, call.dim(n, "n")});
}

void rope(const Device& dev, Operand x, Operand positions, Operand inv_freq, Operand out, size_t tokens,
          size_t heads, size_t head_dim, bool interleaved) {
  OpCall call(dev, "rope");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("out", out, "x", x);
  call.require_elem("positions", positions, {Elem::I32});
  call.require_elem("inv_freq", inv_freq, {Elem::F32});
  if (head_dim == 0 || head_dim % 2 != 0) call.fail("head_dim = " + std::to_string(head_dim) + " must be even and > 0");
  if (inv_freq.size == 0 || inv_freq.size > head_dim / 2)
    call.fail("inv_freq has " + std::to_string(inv_freq.size) + " elements, expected 1 to head_dim / 2 = " +
              std::to_string(head_dim / 2) + " (rotary_dim / 2)");
  size_t n = call.elements({tokens, heads, head_dim}, "tokens * heads * head_dim");
  call.require_at_least("x", x, n, "tokens * heads * head_dim");
  call.require_at_least("positions", positions, tokens, "tokens");
  call.require_at_least("out", out, n, "tokens * heads * head_dim");
  if (n == 0) return;
  // kernels/elementwise.cpp: 4 pairs of up to kRopeHeads heads per thread, else one pair.
  constexpr size_t kRopeHeads = 2;
  bool wide = head_dim % 8 == 0 && inv_freq.size % 4 == 0;
  size_t threads = wide ? tokens * ((heads + kRopeHeads - 1) / kRopeHeads) * (head_dim / 8) : n / 2;
  call.launch(kernel_name(interleaved ? "rope_gptj" : "rope_neox", e), stride_grid(threads),
              {x, positions, inv_freq, out, call.dim(tokens, "tokens"), call.dim(heads, "heads"),
               call.dim(head_dim, "head_dim"), call.dim(inv_freq.size, "inv_freq size")});
}

void embedding(const Device& dev, Operand table, Operand ids, Operand out, size_t tokens, size_t vocab, size_t dim) {
  OpCall call(dev, "embedding");
  Elem e = float_elem(call, "table", table);
  call.require_same_elem("out", out, "table", table);
  call.require_elem("ids", ids, {Elem::I32});
  size_t table_n = call.elements({vocab, dim}, "vocab * dim");
  size_t n = call.elements({tokens, dim}, "tokens * dim");
  call.require_at_least("table", table, table_n, "vocab * dim");
  call.require_at_least("ids", ids, tokens, "tokens");
  call.require_at_least("out", out, n, "tokens * dim");
  if (n == 0) return;
  call.launch(kernel_name("embedding", e), stride_grid(n),
              {table, ids, out, call.dim(tokens, "tokens"), call.dim(dim, "dim"), call.dim(vocab, "vocab")});
}

void argmax(const Device& dev, Operand x, Operand out, size_t rows, size_t cols) {
  OpCall call(dev, "argmax");
  Elem e = float_elem(call, "x", x);
  call.require_elem("out", out, {Elem::I32});
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_at_least("out", out, rows, "rows");
  if (rows > 0 && cols == 0) call.fail("cols is 0: an empty row has no largest element");
  if (cols > 0x7fffffff) call.fail("cols = " + std::to_string(cols) + " does not fit the int32 output");
  if (n == 0) return;
  call.launch(kernel_name("argmax", e), call.row_grid(rows), {x, out, call.dim(rows, "rows"), call.dim(cols, "cols")});
}

void topk(const Device& dev, Operand x, Operand values, Operand indices, size_t rows, size_t cols, size_t k) {
  OpCall call(dev, "topk");
  Elem e = float_elem(call, "x", x);
  call.require_same_elem("values", values, "x", x);
  call.require_elem("indices", indices, {Elem::I32});
  size_t n = call.elements({rows, cols}, "rows * cols");
  size_t out_n = call.elements({rows, k}, "rows * k");
  call.require_at_least("x", x, n, "rows * cols");
  call.require_at_least("values", values, out_n, "rows * k");
  call.require_at_least("indices", indices, out_n, "rows * k");
  if (rows > 0 && (k == 0 || k > cols))
    call.fail("k = " + std::to_string(k) + " must be between 1 and cols = " + std::to_string(cols));
  if (cols > 0x7fffffff) call.fail("cols = " + std::to_string(cols) + " does not fit the int32 indices");
  if (n == 0) return;
  call.launch(kernel_name("topk", e), call.row_grid(rows),
              {x, values, indices, call.dim(rows, "rows"), call.dim(cols, "cols"), call.dim(k, "k")});
}

void kv_append(const Device& dev, Operand src, Operand position, Operand cache, size_t tokens,
               const KvCacheShape& s) {
  OpCall call(dev, "kv_append");
  Elem e = float_elem(call, "src", src);
  call.require_same_elem("cache", cache, "src", src);
  call.require_elem("position", position, {Elem::I32});
  if (s.kv_heads == 0 || s.head_dim == 0 || s.kv_capacity == 0)
    call.fail("kv_heads, head_dim and kv_capacity must be > 0 (got " + std::to_string(s.kv_heads) + ", " +
              std::to_string(s.head_dim) + ", " + std::to_string(s.kv_capacity) + ")");
  if (tokens > s.kv_capacity)
    call.fail("tokens = " + std::to_string(tokens) + " exceeds kv_capacity = " + std::to_string(s.kv_capacity));
  size_t src_n = call.elements({s.batch, tokens, s.kv_heads, s.head_dim}, "batch * tokens * kv_heads * head_dim");
  size_t cache_n = call.elements({s.batch, s.kv_heads, s.kv_capacity, s.head_dim},
                                 "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("src", src, src_n, "batch * tokens * kv_heads * head_dim");
  call.require_at_least("position", position, s.batch, "batch");
  call.require_at_least("cache", cache, cache_n, "batch * kv_heads * kv_capacity * head_dim");
  if (src_n == 0) return;
  // kernels/decode.cpp: a 16-byte chunk per thread when head_dim allows, else an element.
  size_t per_item = s.head_dim % chunk_elems(e) == 0 ? chunk_elems(e) : 1;
  call.launch(kernel_name("kv_append", e), stride_grid(src_n / per_item),
              {src, position, cache, call.dim(s.batch, "batch"), call.dim(tokens, "tokens"),
               call.dim(s.kv_heads, "kv_heads"), call.dim(s.head_dim, "head_dim"),
               call.dim(s.kv_capacity, "kv_capacity"), s.layout == AttentionLayout::BSHD});
}

// The kernels' block shapes the grids below are sized by (kernels/launch_shapes.h).
using qvops::kCpuMatvecRows;
using qvops::kCpuNnCols;
using qvops::kCpuNtCols;
using qvops::kCpuNtDepth;
using qvops::kCpuNtRows;
using qvops::kMatvecRows;
using qvops::kQuantizeThreads;
using qvops::kQuadRows;
using qvops::kQuantRows;
constexpr size_t kCpuNnBlockRows = qvops::kCpuNnRows * qvops::kCpuNnTiles;   // a matmul_cpu_nn block's rows

void matvec(const Device& dev, Operand w, Operand x, Operand y, size_t rows, size_t cols) {
  OpCall call(dev, "matvec");
  Elem e = float_elem(call, "w", w);
  // 16-bit weights also take float activations (kernel matvec_w16<T>, float results).
  call.require_buffer("x", x);
  bool widened = e != Elem::F32 && x.elem == Elem::F32;
  if (e != Elem::F32 && !widened && x.elem != e)
    call.fail("x is a Buffer<" + elem_name(x.elem) + "> but w is a Buffer<" + elem_name(e) + ">; x must be a Buffer<" +
              elem_name(e) + "> or a Buffer<float>");
  if (!widened) call.require_same_elem("x", x, "w", w);
  call.require_same_elem("y", y, "x", x);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("w", w, n, "rows * cols");
  call.require_at_least("x", x, cols, "cols");
  call.require_at_least("y", y, rows, "rows");
  if (rows == 0) return;
  // The CPU image's own f32 kernel (kernels/rows_cpu.cpp: a thread per kCpuMatvecRows rows).
  if (e == Elem::F32 && call.has_kernel("matvec_cpu")) {
    call.launch("matvec_cpu", call.row_grid((rows + kCpuMatvecRows - 1) / kCpuMatvecRows),
                {w, x, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
    return;
  }
  call.launch(kernel_name(widened ? "matvec_w16" : "matvec", e), call.row_grid((rows + kMatvecRows - 1) / kMatvecRows),
              {w, x, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
}

namespace {
struct QuantLayout {
  const char* kernel;   // kernels/matvec.cpp; also the op's name
  size_t block_elems, block_bytes;
  bool repacked = false;   // ops::repack_q8_0 / repack_q4_0's order (kernels/matvec.cpp, "Repacked")
  bool int8_x = false;     // has a product on int8 activations (kernel + "_a8")
  bool float_x = true;     // has a product on float activations
};
QuantLayout quant_layout(QuantFormat format) {
  switch (format) {
    case QuantFormat::Q8_0: return {"matvec_q8_0", kQuantBlock, kQ8_0BlockBytes};
    case QuantFormat::Q4_0: return {"matvec_q4_0", kQuantBlock, kQ4_0BlockBytes};
    case QuantFormat::Q4_K: return {"matvec_q4_k", kQuantSuperBlock, kQ4_KBlockBytes, false, true};
    case QuantFormat::Q6_K: return {"matvec_q6_k", kQuantSuperBlock, kQ6_KBlockBytes};
    case QuantFormat::Q8_0R: return {"matvec_q8_0r", kQuantBlock, kQ8_0BlockBytes, true, true};
    case QuantFormat::Q4_0R: return {"matvec_q4_0r", kQuantBlock, kQ4_0BlockBytes, true, true};
    case QuantFormat::Q6_KR: return {"matvec_q6_kr", kQuantSuperBlock, kQ6_KBlockBytes, false, true, false};
  }
  throw Error(ErrorCode::InvalidArgument, "matvec_quantized: unknown QuantFormat " +
                                              std::to_string(static_cast<int>(format)));
}

// Checks w (bytes of rows x cols in the layout q) and returns the bytes it needs. The kernels
// index those bytes (the repacked matvecs and dequantize, as 32-bit words) with 32-bit
// integers: OpCall::elements refuses a byte count from 2^32 on.
size_t require_blocks(const OpCall& call, const QuantLayout& q, Operand w, size_t rows, size_t cols) {
  call.require_elem("w", w, {Elem::U8});
  const std::string per_block = std::to_string(q.block_elems);
  if (cols % q.block_elems != 0)
    call.fail("cols = " + std::to_string(cols) + " is not a multiple of the " + per_block + "-element " +
              (q.block_elems == kQuantBlock ? "quantization block" : "super-block"));
  if (q.repacked && cols % kRepackCols != 0)
    call.fail("cols = " + std::to_string(cols) + " is not a multiple of " + std::to_string(kRepackCols) +
              " (a repacked row is whole chunks of 32 blocks)");
  std::string expr = "rows * (cols / " + per_block + ") * " + std::to_string(q.block_bytes);
  size_t bytes = call.elements({rows, cols / q.block_elems, q.block_bytes}, expr);
  call.elements({rows, cols}, "rows * cols");
  call.require_at_least("w", w, bytes, expr + " bytes");
  return bytes;
}

// A row count from the environment variable `name` (read at each call, so that a test may set it).
size_t env_rows(const OpCall& call, const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr) return fallback;
  size_t rows = 0;
  const char* end = value + std::strlen(value);
  auto [p, ec] = std::from_chars(value, end, rows);
  if (ec != std::errc() || p != end || p == value)
    call.fail(std::string(name) + "=" + value + " is not a row count (digits only)");
  return rows;
}

// Which kernel of an int8-activation format serves a product of `rows` rows, and the rows a
// block of it takes (kernels/common.h): few rows (at most QUIVER_QUANT_SPLIT_ROWS, 4096) the
// `_split` kernels (2 row pairs a block, each pair's row split between two subgroups); many (at
// least QUIVER_QUANT_QUAD_ROWS, 8192) a `_rows4` kernel (four rows a subgroup, the activations
// loaded once for four rows: q4_0r's; q8_0r, q4_k and q6_kr ran slower so on an H200,
// docs/perf/NOTES.md); the rest 4 row pairs a block. q4_0's SPIR-V image has its own pair walk
// (`_k4`: more loads in flight a lane). Each variant is taken only where the loaded image has it.
struct A8Kernel {
  std::string name;
  size_t rows_per_block;
};
A8Kernel a8_kernel(const OpCall& call, const std::string& op, size_t rows) {
  const std::string pairs = call.has_kernel(op + "_k4") ? op + "_k4" : op;
  if (rows <= env_rows(call, "QUIVER_QUANT_SPLIT_ROWS", 4096) && call.has_kernel(pairs + "_split"))
    return {pairs + "_split", kQuantRows / 2};
  if (rows >= env_rows(call, "QUIVER_QUANT_QUAD_ROWS", 8192) && call.has_kernel(op + "_rows4"))
    return {op + "_rows4", kQuadRows};
  return {pairs, kQuantRows};
}

}  // namespace

void matvec_quantized(const Device& dev, Operand w, Operand x, Operand y, size_t rows, size_t cols,
                      QuantFormat format) {
  const QuantLayout q = quant_layout(format);
  // x as bytes: int8 activations (quantize_activations_q8's layout), for the repacked formats.
  const bool a8 = x.elem == Elem::U8;
  const std::string op = std::string(q.kernel) + (a8 ? "_a8" : "");
  OpCall call(dev, op.c_str());
  if (a8 && !q.int8_x)
    call.fail("int8 activations (x of uint8) take the formats q4_0r, q8_0r, q4_k and q6_kr only");
  if (!a8 && !q.float_x) call.fail("this format takes int8 activations only (x of uint8, quantize_activations_q8)");
  require_blocks(call, q, w, rows, cols);
  call.require_elem("x", x, {Elem::F32, Elem::U8});
  call.require_elem("y", y, {Elem::F32});
  if (a8) call.require_at_least("x", x, activation_q8_bytes(cols), "cols + cols / 32 * 4 bytes");
  else call.require_at_least("x", x, cols, "cols");
  call.require_at_least("y", y, rows, "rows");
  if (rows == 0) return;
  // The weights as 32-bit words and as f16 (the repacked scales, q6_kr's d); int8 x as words and
  // as float (its scales follow the quants).
  Operand words{Elem::U32, w.size / 4, w.buffer}, halves{Elem::F16, w.size / 2, w.buffer};
  Operand xq{Elem::U32, x.size / 4, x.buffer}, xd{Elem::F32, x.size / 4, x.buffer};
  auto grid = call.row_grid((rows + kQuantRows - 1) / kQuantRows);
  // The int8-activation kernels (kernels/matvec.cpp, matvec_k_a8.cpp).
  const A8Kernel a8k = a8 ? a8_kernel(call, op, rows) : A8Kernel{op, kQuantRows};
  const std::string& a8_op = a8k.name;
  auto a8_grid = call.row_grid((rows + a8k.rows_per_block - 1) / a8k.rows_per_block);
  if (a8 && !q.repacked) {
    // kernels/matvec_k_a8.cpp: q4_k needs no f16 view (its scales come with the header words).
    if (format == QuantFormat::Q6_KR)
      call.launch(a8_op, a8_grid, {words, halves, xq, xd, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
    else
      call.launch(a8_op, a8_grid, {words, xq, xd, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
    return;
  }
  if (q.repacked) {
    if (a8) {
      call.launch(a8_op, a8_grid, {words, halves, xq, xd, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
    } else {
      call.launch(op, grid, {words, halves, x, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
    }
    return;
  }
  // The kernels read the blocks as 16-bit words (34, 18, 144 and 210 bytes: every block starts on
  // one), and the same memory as half for the scales.
  Operand words16{Elem::U16, w.size / 2, w.buffer};
  call.launch(q.kernel, grid, {words16, halves, x, y, call.dim(rows, "rows"), call.dim(cols, "cols")});
}

void quantize_activations_q8(const Device& dev, Operand x, Operand xq, size_t n) {
  OpCall call(dev, "quantize_activations_q8");
  call.require_elem("x", x, {Elem::F32});
  call.require_elem("xq", xq, {Elem::U8});
  if (n % kQuantBlock != 0)
    call.fail("n = " + std::to_string(n) + " is not a multiple of the 32-element quantization block");
  call.require_at_least("x", x, n, "n");
  call.require_at_least("xq", xq, activation_q8_bytes(n), "n + n / 32 * 4 bytes");
  if (n == 0) return;
  // The kernel writes the quants as words and the scales as float from byte n, one buffer.
  Operand words{Elem::U32, xq.size / 4, xq.buffer}, scales{Elem::F32, xq.size / 4, xq.buffer};
  // kernels/matvec.cpp: a thread per 4 elements, 256 a workgroup.
  call.launch("quantize_activations_q8", call.row_grid((n / 4 + kQuantizeThreads - 1) / kQuantizeThreads),
              {x, words, scales, call.dim(n, "n")});
}

void dequantize(const Device& dev, Operand w, Operand out, size_t rows, size_t cols, QuantFormat format) {
  const QuantLayout q = quant_layout(format);
  const std::string op = "dequantize" + std::string(q.kernel).substr(6);   // matvec_q8_0 -> dequantize_q8_0
  OpCall call(dev, op.c_str());
  require_blocks(call, q, w, rows, cols);
  Elem e = float_elem(call, "out", out);
  size_t n = call.elements({rows, cols}, "rows * cols");
  call.require_at_least("out", out, n, "rows * cols");
  if (n == 0) return;
  Operand scales{Elem::F16, w.size / 2, w.buffer};
  if (q.repacked) {
    Operand quants{Elem::U32, w.size / 4, w.buffer};
    call.launch(kernel_name(op.c_str(), e), stride_grid(n),
                {quants, scales, out, call.dim(rows, "rows"), call.dim(cols, "cols")});
    return;
  }
  Operand words{Elem::U16, w.size / 2, w.buffer};
  call.launch(kernel_name(op.c_str(), e), stride_grid(n), {words, scales, out, call.dim(n, "rows * cols")});
}

namespace {
constexpr size_t kMatmulTile = 64;   // kernels/matmul.cpp: a block computes a 64 x 64 tile of c
constexpr size_t kMatmulUnitTile = 128, kMatmulUnitDepth = 64;   // kernels/matmul_tiles.cpp
constexpr size_t kMatmulSmallDepth = 32;                          // its _k32 kernels (48 KiB devices)
constexpr size_t kMatmulWgmmaM = 128, kMatmulWgmmaN = 256;         // kernels/matmul_wgmma.cpp
constexpr size_t kMatmulBlockM = 128, kMatmulBlockN = 256, kMatmulBlockK = 32;   // kernels/matmul_block.cpp

Grid matmul_grid(const OpCall& call, size_t m, size_t n) {
  size_t gx = (n + kMatmulTile - 1) / kMatmulTile, gy = (m + kMatmulTile - 1) / kMatmulTile;
  if (gx > 65535 || gy > 65535) call.fail("m and n must each be at most 65535 * 64");
  return Grid{static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1};
}
}  // namespace

void matmul(const Device& dev, Operand a, Operand b, Operand c, size_t m, size_t n, size_t k, bool b_transposed) {
  OpCall call(dev, b_transposed ? "matmul_nt" : "matmul");
  Elem e = float_elem(call, "a", a);
  call.require_same_elem("b", b, "a", a);
  call.require_same_elem("c", c, "a", a);
  call.require_at_least("a", a, call.elements({m, k}, "m * k"), "m * k");
  call.require_at_least("b", b, call.elements({k, n}, "k * n"), b_transposed ? "n * k" : "k * n");
  size_t mn = call.elements({m, n}, "m * n");
  call.require_at_least("c", c, mn, "m * n");
  call.dim(k, "k");
  if (mn == 0) return;
  // Hopper's warpgroup products (kernels/matmul_wgmma.cpp: 128 x 256 tiles of C, K in steps of
  // 64) where the loaded image has them (PTX sm_90a), and the shape is whole tiles.
  if (e != Elem::F32 && m % kMatmulWgmmaM == 0 && n % kMatmulWgmmaN == 0 && k % kMatmulUnitDepth == 0 && k > 0) {
    std::string wgmma = kernel_name(b_transposed ? "matmul_wgmma_nt" : "matmul_wgmma_nn", e);
    if (call.has_kernel(wgmma)) {
      // One dimension: the kernel orders the tiles itself (groups of tile rows).
      size_t tiles = (m / kMatmulWgmmaM) * (n / kMatmulWgmmaN);
      if (tiles > 0x7fffffff) call.fail("m * n must be at most 2^31 128 x 256 tiles");
      Grid grid{static_cast<uint32_t>(tiles), 1, 1};
      call.launch(wgmma, grid, {a, b, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
      return;
    }
  }
  // Block tiles (kernels/matmul_block.cpp: 128 x 256 tiles of C, K in steps of 32) where the
  // loaded image has them (Vulkan with workgroup-scope cooperative matrices), whole tiles only.
  if (e == Elem::F16 && m % kMatmulBlockM == 0 && n % kMatmulBlockN == 0 && k % kMatmulBlockK == 0 && k > 0) {
    std::string kernel = kernel_name(b_transposed ? "matmul_block_nt" : "matmul_block_nn", e);
    if (call.has_kernel(kernel)) {
      Grid grid{static_cast<uint32_t>(n / kMatmulBlockN), static_cast<uint32_t>(m / kMatmulBlockM), 1};
      if (grid.x > 65535 || grid.y > 65535) call.fail("m must be at most 65535 * 128 and n at most 65535 * 256");
      call.launch(kernel, grid, {a, b, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
      return;
    }
  }
  // The matrix-unit kernels (kernels/matmul_tiles.cpp: 128 x 128 tiles of C, K in steps of 64,
  // or of 32 in the _k32 kernels of Vulkan's cooperative-matrix image), where the loaded image
  // has them and the shape is whole tiles.
  auto tiles = [&](const char* nn, const char* nt, size_t depth) {
    if (e == Elem::F32 || m % kMatmulUnitTile != 0 || n % kMatmulUnitTile != 0 || k % depth != 0 || k == 0) return false;
    std::string kernel = kernel_name(b_transposed ? nt : nn, e);
    if (!call.has_kernel(kernel)) return false;
    Grid grid{static_cast<uint32_t>(n / kMatmulUnitTile), static_cast<uint32_t>(m / kMatmulUnitTile), 1};
    if (grid.x > 65535 || grid.y > 65535) call.fail("m and n must each be at most 65535 * 128");
    call.launch(kernel, grid, {a, b, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
    return true;
  };
  if (tiles("matmul_tiles_nn", "matmul_tiles_nt", kMatmulUnitDepth) ||
      tiles("matmul_tiles_k32_nn", "matmul_tiles_k32_nt", kMatmulSmallDepth))
    return;
  // The CPU image's register-blocked f32 kernels (kernels/matmul_cpu.cpp: a thread per column of
  // four 8 x 16 tiles of C, rows 32-byte aligned, or per 4 x 4 tile over K in steps of 8).
  if (e == Elem::F32 && (b_transposed ? k % kCpuNtDepth == 0 : n % kCpuNnCols == 0)) {
    const char* kernel = b_transposed ? "matmul_cpu_nt" : "matmul_cpu_nn";
    const size_t rows = b_transposed ? kCpuNtRows : kCpuNnBlockRows, cols = b_transposed ? kCpuNtCols : kCpuNnCols;
    if (call.has_kernel(kernel)) {
      size_t gx = (n + cols - 1) / cols, gy = (m + rows - 1) / rows;
      if (gx > 65535 || gy > 65535)
        call.fail("m must be at most 65535 * " + std::to_string(rows) + " and n at most 65535 * " + std::to_string(cols));
      call.launch(kernel, Grid{static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1},
                  {a, b, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
      return;
    }
  }
  call.launch(kernel_name(b_transposed ? "matmul_nt" : "matmul_nn", e), matmul_grid(call, m, n),
              {a, b, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
}

void matmul_w8a8(const Device& dev, Operand a, Operand b, Operand a_scale, Operand b_scale, Operand c, size_t m,
                 size_t n, size_t k) {
  OpCall call(dev, "matmul_w8a8");
  call.require_elem("a", a, {Elem::I8});
  call.require_elem("b", b, {Elem::I8});
  call.require_elem("a_scale", a_scale, {Elem::F32});
  call.require_elem("b_scale", b_scale, {Elem::F32});
  call.require_elem("c", c, {Elem::F32});
  if (k > 131072) call.fail("k = " + std::to_string(k) + " exceeds 131072 (the int32 accumulator could overflow)");
  call.require_at_least("a", a, call.elements({m, k}, "m * k"), "m * k");
  call.require_at_least("b", b, call.elements({n, k}, "n * k"), "n * k");
  call.require_exactly("a_scale", a_scale, m, "m");
  call.require_exactly("b_scale", b_scale, n, "n");
  size_t mn = call.elements({m, n}, "m * n");
  call.require_at_least("c", c, mn, "m * n");
  if (mn == 0) return;
  // Hopper's int8 warpgroup products (kernels/matmul_w8a8_wgmma.cpp: 128 x 256 tiles of C, any
  // edges) where the loaded image has them (PTX sm_90a) and the rows start 16-byte aligned.
  if (k % 16 == 0 && k > 0 && call.has_kernel("matmul_w8a8_wgmma")) {
    size_t tiles = ((m + kMatmulWgmmaM - 1) / kMatmulWgmmaM) * ((n + kMatmulWgmmaN - 1) / kMatmulWgmmaN);
    if (tiles > 0x7fffffff) call.fail("m * n must be at most 2^31 128 x 256 tiles");
    call.launch("matmul_w8a8_wgmma", Grid{static_cast<uint32_t>(tiles), 1, 1},
                {a, b, a_scale, b_scale, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
    return;
  }
  // int8 block tiles (kernels/matmul_w8a8_block.cpp: 128 x 256 tiles, K 64 a step; Vulkan with
  // workgroup-scope int8 cooperative matrices), whole tiles only: the int32 sums into C's memory,
  // then scaled to floats in place.
  if (m % kMatmulBlockM == 0 && n % kMatmulBlockN == 0 && k % 64 == 0 && k > 0 && mn <= 0xffffffffu &&
      call.has_kernel("matmul_w8a8_block") && call.has_kernel("w8a8_scale")) {
    Operand sums{Elem::I32, c.size, c.buffer};
    Grid grid{static_cast<uint32_t>(n / kMatmulBlockN), static_cast<uint32_t>(m / kMatmulBlockM), 1};
    if (grid.x > 65535 || grid.y > 65535) call.fail("m must be at most 65535 * 128 and n at most 65535 * 256");
    call.launch("matmul_w8a8_block", grid, {a, b, sums, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
    call.launch("w8a8_scale", call.row_grid((mn + 255) / 256), {sums, c, a_scale, b_scale, call.dim(m, "m"), call.dim(n, "n")});
    return;
  }
  // The int8 matrix-unit kernel (kernels/matmul_w8a8_tiles.cpp: 128 x 128 tiles of C, any shape)
  // where the loaded image has it: PTX, and Vulkan's cooperative-matrix image.
  if (call.has_kernel("matmul_w8a8_tiles")) {
    size_t gx = (n + kMatmulUnitTile - 1) / kMatmulUnitTile, gy = (m + kMatmulUnitTile - 1) / kMatmulUnitTile;
    if (gx > 65535 || gy > 65535) call.fail("m and n must each be at most 65535 * 128");
    call.launch("matmul_w8a8_tiles", Grid{static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1},
                {a, b, a_scale, b_scale, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
    return;
  }
  call.launch("matmul_w8a8", matmul_grid(call, m, n),
              {a, b, a_scale, b_scale, c, call.dim(m, "m"), call.dim(n, "n"), call.dim(k, "k")});
}

void attention(const Device& dev, Operand q, Operand k, Operand v, Operand o, const AttentionShape& s) {
  OpCall call(dev, "attention");
  Elem e = float_elem(call, "q", q);
  call.require_same_elem("k", k, "q", q);
  call.require_same_elem("v", v, "q", q);
  call.require_same_elem("o", o, "q", q);
  if (s.head_dim != 64 && s.head_dim != 128)
    call.fail("head_dim = " + std::to_string(s.head_dim) + " is not supported (64 or 128)");
  if (s.kv_heads == 0 || s.q_heads % s.kv_heads != 0)
    call.fail("q_heads = " + std::to_string(s.q_heads) + " must be a multiple of kv_heads = " +
              std::to_string(s.kv_heads));
  size_t capacity = s.kv_capacity == 0 ? s.kv_len : s.kv_capacity;
  if (s.kv_len > capacity)
    call.fail("kv_len = " + std::to_string(s.kv_len) + " exceeds kv_capacity = " + std::to_string(capacity));
  if (s.q_len > 0 && s.kv_len == 0) call.fail("kv_len is 0: there is nothing to attend to");
  if (s.causal && s.kv_len < s.q_len)
    call.fail("causal attention needs kv_len >= q_len (the queries are the last q_len of the kv_len positions); "
              "got q_len = " + std::to_string(s.q_len) + ", kv_len = " + std::to_string(s.kv_len));
  if (!std::isfinite(s.scale)) call.fail("scale must be finite");
  size_t qn = call.elements({s.batch, s.q_heads, s.q_len, s.head_dim}, "batch * q_heads * q_len * head_dim");
  size_t kvn = call.elements({s.batch, s.kv_heads, capacity, s.head_dim}, "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("q", q, qn, "batch * q_heads * q_len * head_dim");
  call.require_at_least("k", k, kvn, "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("v", v, kvn, "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("o", o, qn, "batch * q_heads * q_len * head_dim");
  if (qn == 0) return;
  if (s.q_heads > 65535 || s.batch > 65535) call.fail("batch and q_heads must each be at most 65535");

  const size_t d = s.head_dim;
  const bool bhsd = s.layout == AttentionLayout::BHSD;
  uint32_t q_head_stride = call.dim(bhsd ? s.q_len * d : d, "q head stride");
  uint32_t q_seq_stride = call.dim(bhsd ? d : s.q_heads * d, "q seq stride");
  uint32_t kv_head_stride = call.dim(bhsd ? capacity * d : d, "kv head stride");
  uint32_t kv_seq_stride = call.dim(bhsd ? d : s.kv_heads * d, "kv seq stride");
  uint32_t kv_batch_stride = call.dim(s.kv_heads * capacity * d, "kv batch stride");
  float scale = s.scale == 0.0f ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))) : s.scale;
  // For 16-bit inputs the warpgroup kernel (kernels/attention_wgmma.cpp: 128 query rows a block)
  // where the loaded image has it, else the matrix-unit kernel (kernels/attention_tiles.cpp: 64
  // rows) where the backend has it; for half on SPIR-V's cooperative matrices the block-tile
  // kernel (kernels/attention_block.cpp) on whole 64-row, 64-key tiles, else the tiles' lean
  // variant; otherwise kernels/attention.cpp (BQ = 256 * 8 / D).
  const std::string shape = "<" + elem_name(e) + ", " + std::to_string(d) + ">";
  std::string kernel = "attention" + shape;
  size_t rows_per_block = 2048 / d;
  if (e != Elem::F32 && call.has_kernel("attention_wgmma" + shape)) {
    kernel = "attention_wgmma" + shape;
    rows_per_block = 128;
  } else if (e != Elem::F32 && call.has_kernel("attention_tiles" + shape)) {
    kernel = "attention_tiles" + shape;
    rows_per_block = 64;
  } else if (e == Elem::F16 && s.q_len % 64 == 0 && s.kv_len % 64 == 0 && call.has_kernel("attention_block" + shape)) {
    kernel = "attention_block" + shape;
    rows_per_block = 64;
  } else if (e == Elem::F16 && call.has_kernel("attention_tiles_lean" + shape)) {
    kernel = "attention_tiles_lean" + shape;
    rows_per_block = 64;
  }
  Grid grid{static_cast<uint32_t>((s.q_len + rows_per_block - 1) / rows_per_block),
            static_cast<uint32_t>(s.q_heads), static_cast<uint32_t>(s.batch)};
  if (grid.x > 65535) call.fail("q_len = " + std::to_string(s.q_len) + " needs more than 65535 blocks");
  call.launch(kernel, grid,
              {q, k, v, o, call.dim(s.q_heads, "q_heads"), call.dim(s.kv_heads, "kv_heads"), call.dim(s.q_len, "q_len"),
               call.dim(s.kv_len, "kv_len"), q_head_stride, q_seq_stride, kv_head_stride, kv_seq_stride,
               kv_batch_stride, scale, s.causal});
}

void attention_decode(const Device& dev, Operand q, Operand k, Operand v, Operand position, Operand o,
                      Operand workspace, size_t q_heads, const KvCacheShape& c, float scale, Operand o_q8) {
  const bool q8 = o_q8.buffer != nullptr;
  OpCall call(dev, q8 ? "attention_decode_q8" : "attention_decode");
  if (q8) call.require_elem("q", q, {Elem::F32});
  Elem e = float_elem(call, "q", q);
  call.require_same_elem("k_cache", k, "q", q);
  call.require_same_elem("v_cache", v, "q", q);
  call.require_same_elem("o", o, "q", q);
  call.require_elem("position", position, {Elem::I32});
  call.require_elem("workspace", workspace, {Elem::F32});
  if (c.head_dim != 64 && c.head_dim != 128)
    call.fail("head_dim = " + std::to_string(c.head_dim) + " is not supported (64 or 128)");
  if (c.kv_heads == 0 || q_heads % c.kv_heads != 0)
    call.fail("q_heads = " + std::to_string(q_heads) + " must be a multiple of kv_heads = " + std::to_string(c.kv_heads));
  if (c.kv_capacity == 0) call.fail("kv_capacity is 0: there is nothing to attend to");
  if (!std::isfinite(scale)) call.fail("scale must be finite");
  const size_t d = c.head_dim, chunk = attention_decode_chunk();
  size_t qn = call.elements({c.batch, q_heads, d}, "batch * q_heads * head_dim");
  size_t kvn = call.elements({c.batch, c.kv_heads, c.kv_capacity, d}, "batch * kv_heads * kv_capacity * head_dim");
  size_t splits = (c.kv_capacity + chunk - 1) / chunk;
  size_t wn = call.elements({c.batch * q_heads, splits, d + 2}, "attention_decode_workspace(q_heads, cache)");
  call.require_at_least("q", q, qn, "batch * q_heads * head_dim");
  call.require_at_least("k_cache", k, kvn, "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("v_cache", v, kvn, "batch * kv_heads * kv_capacity * head_dim");
  call.require_at_least("position", position, c.batch, "batch");
  call.require_at_least("o", o, qn, "batch * q_heads * head_dim");
  call.require_at_least("workspace", workspace, wn, "attention_decode_workspace(q_heads, cache)");
  // o as int8 activations: per batch row, q_heads * head_dim quants then a float scale per 32.
  const size_t row_q8 = activation_q8_bytes(q_heads * d);
  if (q8) {
    call.require_elem("o_q8", o_q8, {Elem::U8});
    size_t q8n = call.elements({c.batch, row_q8}, "batch * activation_q8_bytes(q_heads * head_dim)");
    call.require_at_least("o_q8", o_q8, q8n, "batch * activation_q8_bytes(q_heads * head_dim) bytes");
  }
  if (qn == 0) return;
  if (c.batch > 65535 || q_heads > 65535 || splits > 65535)
    call.fail("batch, q_heads and kv_capacity / " + std::to_string(chunk) + " must each be at most 65535");
  // kernels/attention_decode.cpp: a block serves up to 4 query heads of one KV head.
  const size_t group = q_heads / c.kv_heads;
  size_t per_block = 4;
  while (group % per_block != 0) --per_block;
  const bool bhsd = c.layout == AttentionLayout::BHSD;
  const std::string shape = "<" + elem_name(e) + ", " + std::to_string(d) + ">";
  float s = scale == 0.0f ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))) : scale;
  // The workspace: the partial outputs, then the (m, l) pairs.
  const uint32_t ml_base = call.dim(c.batch * q_heads * splits * d, "attention_decode_workspace");
  call.launch("attention_decode_split" + shape,
              Grid{static_cast<uint32_t>(splits), static_cast<uint32_t>(q_heads / per_block),
                   static_cast<uint32_t>(c.batch)},
              {q, k, v, position, workspace, ml_base, call.dim(q_heads, "q_heads"), call.dim(group, "group"),
               call.dim(per_block, "heads per block"), call.dim(c.kv_capacity, "kv_capacity"),
               call.dim(bhsd ? c.kv_capacity * d : d, "kv head stride"),
               call.dim(bhsd ? d : c.kv_heads * d, "kv seq stride"), call.dim(c.kv_heads * c.kv_capacity * d, "kv batch stride"),
               call.dim(splits, "splits"), s});
  const Grid combine{static_cast<uint32_t>(q_heads), 1, static_cast<uint32_t>(c.batch)};
  if (q8) {
    // kernels/attention_decode.cpp: the quants as words, the scales as float, one buffer.
    Operand words{Elem::U32, o_q8.size / 4, o_q8.buffer}, scales{Elem::F32, o_q8.size / 4, o_q8.buffer};
    call.dim(c.batch * row_q8 / 4, "batch * activation_q8_bytes(q_heads * head_dim) / 4");
    call.launch("attention_decode_combine_q8<" + std::to_string(d) + ">", combine,
                {workspace, ml_base, position, o, words, scales, call.dim(q_heads, "q_heads"),
                 call.dim(c.kv_capacity, "kv_capacity"), call.dim(splits, "splits")});
    return;
  }
  call.launch("attention_decode_combine" + shape, combine,
              {workspace, ml_base, position, o, call.dim(q_heads, "q_heads"), call.dim(c.kv_capacity, "kv_capacity"),
               call.dim(splits, "splits")});
}

}  // namespace quiver::ops::detail
