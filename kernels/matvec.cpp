// Matrix-vector products for decoding (batch 1): y[n] = sum_k W[n, k] x[k] with W row-major
// [rows][cols] (a linear layer's weight, out_features x in_features). matvec (and matvec_w16:
// 16-bit weights, float x and y): a block per four output rows; the quantized forms: a subgroup
// per two (below). Threads stride along the rows (coalesced) and accumulate in float.
//
// The block-quantized forms keep llama.cpp's byte layouts, so GGUF tensors can be uploaded as
// they are (one row = cols / 32 consecutive blocks, or cols / 256 super-blocks):
//   q8_0: 34 bytes per block = f16 scale d, then 32 int8 q;                w = d * q
//   q4_0: 18 bytes per block = f16 scale d, then 16 bytes; byte j holds element j in its low
//         nibble and element j + 16 in its high nibble;                    w = d * (nibble - 8)
//   q4_k: 144-byte super-blocks of 8 sub-blocks of 32, 6-bit scales and mins (details below)
//   q6_k: 210-byte super-blocks of 16 sub-blocks of 16, int8 scales, 6-bit q (details below)
// Dequantisation happens in the kernel; d * q is exact in float (11-bit by 8-bit significands).
#include "matvec_repacked.h"

using qvops::from_f32;
using qvops::kChunkBlocks;
using qvops::kChunkLanes;
using qvops::kMatvecRows;
using qvops::kQBlock;
using qvops::kQuantizeThreads;
using qvops::kRowThreads;
using qvops::load_chunk;
using qvops::matvec_repacked_a8;

constexpr uint32_t kQ8Words = 17;        // 16-bit words per q8_0 block (34 bytes)
constexpr uint32_t kQ4Words = 9;         // 16-bit words per q4_0 block (18 bytes)
constexpr uint32_t kKBlock = 256;        // elements per K-quant super-block
constexpr uint32_t kQ4KWords = 72;       // 16-bit words per q4_k super-block (144 bytes)
constexpr uint32_t kQ6KWords = 105;      // 16-bit words per q6_k super-block (210 bytes)

// A block of kRowThreads threads computes kMatvecRows = 4 outputs: its threads stride along the
// four rows together (coalesced), so each x value a thread loads serves four rows, and the sums
// are reduced with qv::block_sum. Many small blocks (3584 for 14336 rows) keep every
// multiprocessor streaming to the end: with a subgroup per row and 8 rows per block, the H100
// ran 14336 x 4096 in 1.9 waves of blocks, the last one half idle (ncu on 4096 x 4096: achieved
// occupancy 45%). Two rows per block reached 0.85 of copy, latency-bound (ncu: DRAM 75%, 20
// cycles per issued instruction): a block's loads are in flight only until its reductions
// start, so four rows per block keep twice the bytes in flight per reduction (and the four
// reductions share one barrier, below). Rows of a block
// past the last row re-read its first row and are not stored. The host launches ceil(rows / 4).
//
// Rows whose length is a multiple of a 16-byte chunk (qvops::chunk_elems: 4 float, 8 half /
// bf16) are read in 16-byte accesses, two chunks per row and step in flight; other rows take
// W = 4 (8 or 16 bytes) or W = 1. Products accumulate with qv::fma (the PTX target keeps a
// separate multiply and add unfused otherwise).
QV_DEVICE float dot4_acc(qv::float4 a, qv::float4 b, float acc) {
  return qv::fma(a[3], b[3], qv::fma(a[2], b[2], qv::fma(a[1], b[1], qv::fma(a[0], b[0], acc))));
}
template <typename T>
QV_DEVICE float dot_chunk(const T* w, qv::float4 x0, qv::float4 x1, float acc) {
  qv::float4 w0, w1 = qv::float4(0.0f);   // w1: 16-bit T only
  qvops::load16(w, w0, w1);
  if constexpr (qvops::chunk_elems<T>() == 8) return dot4_acc(w1, x1, dot4_acc(w0, x0, acc));
  else return dot4_acc(w0, x0, acc);
}

// The activations of one weight chunk (E elements of x at `x`): a 16-byte chunk of A when A is as
// wide as the weights, else (16-bit weights, float activations) two float4.
template <uint32_t E, typename A>
QV_DEVICE void load_x_chunk(const A* x, qv::float4& lo, qv::float4& hi) {
  if constexpr (qvops::chunk_elems<A>() == E) {
    qvops::load16(x, lo, hi);
  } else {
    lo = qvops::load4(x);
    hi = qvops::load4(x + 4);
  }
}

// Weights T, activations and outputs A (A = T, or float for 16-bit T).
template <uint32_t W, typename T, typename A>
QV_DEVICE void matvec_rows(const T* w, const A* x, A* y, uint32_t rows, uint32_t cols) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  uint32_t row0 = qvops::block_row() * kMatvecRows;
  if (row0 >= rows) return;   // uniform per block
  const T* w0 = w + row0 * cols;
  const T* w1 = row0 + 1 < rows ? w0 + cols : w0;
  const T* w2 = row0 + 2 < rows ? w0 + 2 * cols : w0;
  const T* w3 = row0 + 3 < rows ? w0 + 3 * cols : w0;
  float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
  if constexpr (W == E) {
    uint32_t c = qv::thread_id_x() * E, s = kRowThreads * E;
    qv::float4 zero(0.0f);
    for (; c + s < cols; c += 2 * s) {
      qv::float4 a0, a1 = zero, b0, b1 = zero;
      load_x_chunk<E>(x + c, a0, a1);
      load_x_chunk<E>(x + c + s, b0, b1);
      acc0 = dot_chunk(w0 + c + s, b0, b1, dot_chunk(w0 + c, a0, a1, acc0));
      acc1 = dot_chunk(w1 + c + s, b0, b1, dot_chunk(w1 + c, a0, a1, acc1));
      acc2 = dot_chunk(w2 + c + s, b0, b1, dot_chunk(w2 + c, a0, a1, acc2));
      acc3 = dot_chunk(w3 + c + s, b0, b1, dot_chunk(w3 + c, a0, a1, acc3));
    }
    if (c < cols) {
      qv::float4 a0, a1 = zero;
      load_x_chunk<E>(x + c, a0, a1);
      acc0 = dot_chunk(w0 + c, a0, a1, acc0);
      acc1 = dot_chunk(w1 + c, a0, a1, acc1);
      acc2 = dot_chunk(w2 + c, a0, a1, acc2);
      acc3 = dot_chunk(w3 + c, a0, a1, acc3);
    }
  } else {
    for (uint32_t c = qv::thread_id_x() * W; c < cols; c += kRowThreads * W) {
      qv::float4 xv = qvops::load_w<W>(x + c);
      acc0 = dot4_acc(qvops::load_w<W>(w0 + c), xv, acc0);
      acc1 = dot4_acc(qvops::load_w<W>(w1 + c), xv, acc1);
      acc2 = dot4_acc(qvops::load_w<W>(w2 + c), xv, acc2);
      acc3 = dot4_acc(qvops::load_w<W>(w3 + c), xv, acc3);
    }
  }
  // The four sums in one exchange: subgroup sums, one barrier, and thread 0 (the only one that
  // stores) adds the subgroups' partials. Four qv::block_sum calls took two barriers each, and
  // every thread read every partial, while the block's loads had drained.
  qv::shared<float, kMatvecRows * kRowThreads> partial;   // a slot per subgroup, even of size 1
  uint32_t sg = qv::subgroup_size(), group = qv::thread_id_x() / sg;
  float s0 = qv::subgroup_sum(acc0), s1 = qv::subgroup_sum(acc1);
  float s2 = qv::subgroup_sum(acc2), s3 = qv::subgroup_sum(acc3);
  if (qv::subgroup_lane() == 0) {
    partial[group] = s0;
    partial[kRowThreads + group] = s1;
    partial[2 * kRowThreads + group] = s2;
    partial[3 * kRowThreads + group] = s3;
  }
  qv::barrier();
  if (qv::thread_id_x() == 0) {
    float sum0 = 0.0f, sum1 = 0.0f, sum2 = 0.0f, sum3 = 0.0f;
    for (uint32_t g = 0; g * sg < kRowThreads; ++g) {
      sum0 += partial[g];
      sum1 += partial[kRowThreads + g];
      sum2 += partial[2 * kRowThreads + g];
      sum3 += partial[3 * kRowThreads + g];
    }
    y[row0] = from_f32<A>(sum0);
    if (row0 + 1 < rows) y[row0 + 1] = from_f32<A>(sum1);
    if (row0 + 2 < rows) y[row0 + 2] = from_f32<A>(sum2);
    if (row0 + 3 < rows) y[row0 + 3] = from_f32<A>(sum3);
  }
}

template <typename T, typename A>
QV_DEVICE void matvec_any(const T* w, const A* x, A* y, uint32_t rows, uint32_t cols) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  if (cols % E == 0) matvec_rows<E>(w, x, y, rows, cols);
  else if (cols % 4 == 0) matvec_rows<4>(w, x, y, rows, cols);
  else matvec_rows<1>(w, x, y, rows, cols);
}

template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void matvec(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
  matvec_any(w, x, y, rows, cols);
}

// 16-bit weights (half, bf16: a decode step reads half the bytes of f32 weights) with float
// activations and outputs.
template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void matvec_w16(const T* w, const float* x, float* y, uint32_t rows, uint32_t cols) {
  matvec_any(w, x, y, rows, cols);
}

// ---- Block-quantized forms ------------------------------------------------------------------
// The weights are read as 16-bit words (blocks are 34, 18, 144 and 210 bytes, so every block
// starts on a word): the host binds the byte buffer twice, as uint16_t `w` and as qv::half
// `scales` (the f16 at word b is scales[b]), and the integers become floats through
// their bits (field() below). Byte loads, the integer-to-float converter (a quarter of the float
// rate on NVIDIA) and a bit-by-bit f16 decoding per 4 elements made these kernels issue-bound on
// the H100 at 0.44 (q8_0) and 0.22 (q4_0) of copy bandwidth.
//
// A subgroup works on two rows at once, so each x value it loads serves both (x is f32: 4 bytes
// per weight element, 3.8x the q8_0 weight bytes and 7x the q4_0 ones). Lane l takes group
// j = l % 4 (8 elements) of blocks l / 4, l / 4 + sg / 4, ..., so consecutive lanes read
// consecutive words and every offset steps by a constant (a loop over 8-element groups with a
// division and remainder per step spent ~30 of ~114 instructions per step on addresses: q4_0
// 1268 -> 1337 GB/s, q8_0 1900 -> 2004 on the H100). The K-quants' super-blocks split the same
// way into 8 groups of 32 elements (a group's scales decoded once for its 32). Blocks of 128
// threads and 8 rows, 32 registers: 1792 blocks for 14336 rows are one wave on the H100 at full
// occupancy; 256-thread blocks of 16 rows with two groups per step (40 registers) ran 1.13 waves.
// Slower, not kept (docs/perf/NOTES.md): staging the rows through shared memory with
// qv::copy_async (q4_0 1026, ~40% more instructions) and prefetching the rows into L2 (q4_0 1136
// all at once, 1280 four steps ahead).
using qvops::kQuantThreads;
using qvops::pair_row;
using qvops::pair_steps;
using qvops::store_pair;

// Integers to floats through the bits, a field at a time: a field whose lowest bit is bit S
// (S + width <= 23) reads as 2^(23 - S) + field once the exponent makes bit S worth 1 (an AND
// and an OR, no shift), then one subtraction of 2^(23 - S) + bias gives field - bias exactly.
template <uint32_t S>
QV_DEVICE float field(uint32_t v, uint32_t mask, float bias) {
  constexpr uint32_t exponent = (150u - S) << 23;   // 2^(23 - S)
  constexpr float offset = static_cast<float>(1u << (23 - S));
  return qv::bit_cast<float>((v & (mask << S)) | exponent) - (offset + bias);
}

// d * (q . x) for one q8_0 group: its 8 quants in a (bytes 0-3) and b (bytes 4-7); the int8 q
// is (q ^ 0x80) - 128.
QV_DEVICE float q8_sum(uint32_t a, uint32_t b, qv::float4 x0, qv::float4 x1) {
  a ^= 0x80808080u;
  b ^= 0x80808080u;
  uint32_t ah = a >> 16, bh = b >> 16;
  qv::float4 lo(field<0>(a, 255u, 128.0f), field<8>(a, 255u, 128.0f), field<0>(ah, 255u, 128.0f), field<8>(ah, 255u, 128.0f));
  qv::float4 hi(field<0>(b, 255u, 128.0f), field<8>(b, 255u, 128.0f), field<0>(bh, 255u, 128.0f), field<8>(bh, 255u, 128.0f));
  return dot4_acc(hi, x1, dot4_acc(lo, x0, 0.0f));
}
QV_DEVICE float q8_dot(uint32_t a, uint32_t b, float d, qv::float4 x0, qv::float4 x1) { return d * q8_sum(a, b, x0, x1); }

// d * ((q - 8) . x) for one q4_0 group: 4 bytes p of the block's 16, whose low nibbles are
// elements 4j .. 4j + 3 (x0) and high nibbles 4j + 16 .. 4j + 19 (x1).
QV_DEVICE float q4_sum(uint32_t p, qv::float4 x0, qv::float4 x1) {
  uint32_t ph = p >> 16;
  qv::float4 lo(field<0>(p, 15u, 8.0f), field<8>(p, 15u, 8.0f), field<16>(p, 15u, 8.0f), field<8>(ph, 15u, 8.0f));
  qv::float4 hi(field<4>(p, 15u, 8.0f), field<12>(p, 15u, 8.0f), field<4>(ph, 15u, 8.0f), field<12>(ph, 15u, 8.0f));
  return dot4_acc(hi, x1, dot4_acc(lo, x0, 0.0f));
}
QV_DEVICE float q4_dot(uint32_t p, float d, qv::float4 x0, qv::float4 x1) { return d * q4_sum(p, x0, x1); }

QV_DEVICE uint32_t word_pair(uint32_t lo, uint32_t hi) { return lo | (hi << 16); }

// The block formats matvec_quant_rows runs: a block is `words` 16-bit words for `elems` weights,
// split among lanes into `groups` groups (a group a lane and step).
enum class Quant : uint32_t { Q8_0, Q4_0, Q4_K, Q6_K };
template <Quant F>
constexpr uint32_t quant_words() {
  return F == Quant::Q8_0 ? kQ8Words : F == Quant::Q4_0 ? kQ4Words : F == Quant::Q4_K ? kQ4KWords : kQ6KWords;
}
template <Quant F>
constexpr uint32_t quant_elems() {
  return F == Quant::Q8_0 || F == Quant::Q4_0 ? kQBlock : kKBlock;
}
template <Quant F>
constexpr uint32_t quant_groups() {
  return F == Quant::Q8_0 || F == Quant::Q4_0 ? 4 : 8;
}

// Group g (block g / 4, group j = g % 4 in it) of the rows at words r0 and r1, x loaded once for
// both: x[32 (g / 4) + 8 j] and the next 4 for q8_0, x[32 (g / 4) + 4 j] and 16 further for q4_0;
// the quants are words 1 + 2j, 2 + 2j (q4_0) or 1 + 4j .. 4 + 4j (q8_0) of the block.
template <Quant F>
QV_DEVICE float quant_group(const uint16_t* w, const qv::half* scales, uint32_t b, uint32_t j, qv::float4 x0,
                            qv::float4 x1) {
  constexpr bool q4 = F == Quant::Q4_0;
  float d = static_cast<float>(scales[b]);
  const uint16_t* q = w + b + (q4 ? 2 : 4) * j;   // one address; the words are at fixed offsets from it
  if constexpr (q4) return q4_dot(word_pair(q[1], q[2]), d, x0, x1);
  else return q8_dot(word_pair(q[1], q[2]), word_pair(q[3], q[4]), d, x0, x1);
}

// ---- K-quants: 256-element super-blocks --------------------------------------------------------
// q4_k, 144 bytes = 72 words: f16 d (word 0), f16 dmin (word 1), 12 bytes packing eight 6-bit
// (scale, min) pairs (words 2-7), 128 bytes of nibbles (words 8-71). Byte i of the 32 at byte
// 16 + 32c holds element 64c + i (sub-block 2c) in its low nibble and element 64c + 32 + i
// (sub-block 2c + 1) in its high one; w = d scale_s q - dmin min_s. Scale and min of sub-block
// s < 4 are the low 6 bits of scale bytes s and s + 4; of s >= 4, the nibbles of byte s + 4
// (low: scale, high: min) under the top 2 bits of bytes s - 4 (scale) and s (min).
// Group j (c = j / 2) is bytes 16 (j % 2) .. + 15 of chunk c: 16 elements of sub-block 2c and 16
// of 2c + 1, summed as d scale_s (q . x) - dmin min_s (sum of x) per sub-block, so the mins cost
// one add per x element, shared by the two rows.

// The scales (low byte: sub-block 2c, high byte: 2c + 1) and mins of the q4_k block at word b.
QV_DEVICE void q4_k_scales(const uint16_t* w, uint32_t b, uint32_t c, uint32_t& scale, uint32_t& min) {
  uint32_t p = w[b + 2 + c], q = w[b + 4 + c];   // scale bytes 2c, 2c + 1 and 2c + 4, 2c + 5
  if (c < 2) {
    scale = p & 0x3F3Fu;
    min = q & 0x3F3Fu;
  } else {
    uint32_t r = w[b + c];   // scale bytes 2c - 4, 2c - 3
    scale = (q & 0x0F0Fu) | ((r >> 2) & 0x3030u);
    min = ((q >> 4) & 0x0F0Fu) | ((p >> 2) & 0x3030u);
  }
}

// Four bytes p of a q4_k group: low nibbles . xl into lo, high nibbles . xh into hi.
QV_DEVICE void q4_k_bytes(uint32_t p, qv::float4 xl, qv::float4 xh, float& lo, float& hi) {
  uint32_t ph = p >> 16;
  qv::float4 ql(field<0>(p, 15u, 0.0f), field<8>(p, 15u, 0.0f), field<0>(ph, 15u, 0.0f), field<8>(ph, 15u, 0.0f));
  qv::float4 qh(field<4>(p, 15u, 0.0f), field<12>(p, 15u, 0.0f), field<4>(ph, 15u, 0.0f), field<12>(ph, 15u, 0.0f));
  lo = dot4_acc(ql, xl, lo);
  hi = dot4_acc(qh, xh, hi);
}

// Sub-blocks 2c and 2c + 1 of the q4_k block at word b, given q . x (lo, hi) and the sums of x.
QV_DEVICE float q4_k_sum(const uint16_t* w, const qv::half* scales, uint32_t b, uint32_t c, float lo, float hi,
                         float x_lo, float x_hi) {
  uint32_t scale, min;
  q4_k_scales(w, b, c, scale, min);
  float d = static_cast<float>(scales[b]), dmin = static_cast<float>(scales[b + 1]);
  // d scale and dmin min are exact in float (11-bit by 6-bit significands).
  float d0 = d * field<0>(scale, 63u, 0.0f), d1 = d * field<8>(scale, 63u, 0.0f);
  float m0 = dmin * field<0>(min, 63u, 0.0f), m1 = dmin * field<8>(min, 63u, 0.0f);
  return qv::fma(d0, lo, qv::fma(d1, hi, -qv::fma(m0, x_lo, m1 * x_hi)));
}

// Bytes 4I .. 4I + 3 of a q4_k group in both rows (nibble words at q0, q1), x loaded once for
// both and added to the sums of x. Written out per I: a loop over I stayed a loop in the PTX.
template <uint32_t I>
QV_DEVICE void q4_k_quarter(qv::vec<uint16_t, 8> q0, qv::vec<uint16_t, 8> q1, const float* xg, qv::float4& x_lo,
                            qv::float4& x_hi, float& lo0, float& hi0, float& lo1, float& hi1) {
  qv::float4 xl = qv::load<4>(xg + 4 * I), xh = qv::load<4>(xg + 32 + 4 * I);
  x_lo += xl;
  x_hi += xh;
  q4_k_bytes(word_pair(q0[2 * I], q0[2 * I + 1]), xl, xh, lo0, hi0);
  q4_k_bytes(word_pair(q1[2 * I], q1[2 * I + 1]), xl, xh, lo1, hi1);
}

// Group j of super-block b in both rows (their blocks at words b0 and b1), x loaded once for both.
QV_DEVICE void q4_k_step(const uint16_t* w, const qv::half* scales, const float* x, uint32_t b0, uint32_t b1,
                         uint32_t b, uint32_t j, float& acc0, float& acc1) {
  uint32_t c = j / 2;
  // The group's 16 nibble bytes in each row, one 16-byte load each (a super-block is 144 bytes and
  // its nibbles start at byte 16, so they are aligned): eight 16-bit loads a row kept too few
  // bytes in flight (q4_k 14336 x 4096 on the H100: 0.36 of copy).
  qv::vec<uint16_t, 8> q0 = qv::load<8>(w + b0 + 8 + 8 * j), q1 = qv::load<8>(w + b1 + 8 + 8 * j);
  const float* xg = x + b * kKBlock + 64 * c + 16 * (j % 2);   // sub-block 2c's 16; 32 further, 2c + 1's
  float lo0 = 0.0f, hi0 = 0.0f, lo1 = 0.0f, hi1 = 0.0f;
  qv::float4 x_lo(0.0f), x_hi(0.0f);
  q4_k_quarter<0>(q0, q1, xg, x_lo, x_hi, lo0, hi0, lo1, hi1);
  q4_k_quarter<1>(q0, q1, xg, x_lo, x_hi, lo0, hi0, lo1, hi1);
  q4_k_quarter<2>(q0, q1, xg, x_lo, x_hi, lo0, hi0, lo1, hi1);
  q4_k_quarter<3>(q0, q1, xg, x_lo, x_hi, lo0, hi0, lo1, hi1);
  float sum_lo = qvops::sum4(x_lo), sum_hi = qvops::sum4(x_hi);
  acc0 += q4_k_sum(w, scales, b0, c, lo0, hi0, sum_lo, sum_hi);
  acc1 += q4_k_sum(w, scales, b1, c, lo1, hi1, sum_lo, sum_hi);
}

// q6_k, 210 bytes = 105 words: 128 bytes ql (words 0-63), 64 bytes qh (words 64-95), 16 int8
// scales (words 96-103), f16 d (word 104); w = d scale (q - 32). Element 128n + 32k + l of a
// super-block (n < 2, k < 4, l < 32) has the low (k < 2) or high (k >= 2) nibble of ql byte
// 64n + 32 (k % 2) + l as its low 4 bits, bits 2k, 2k + 1 of qh byte 32n + l as its top 2, and
// scale 8n + 2k + l / 16. Group j (n = j / 4, l = 8 (j % 4) .. + 7) is 8 elements of each k: 12
// quant words and 4 scales.

// The 6-bit quants of elements k of four l (a byte each) from their ql bytes `lo` and qh bytes h.
template <uint32_t K>
QV_DEVICE uint32_t q6_k_quants(uint32_t lo, uint32_t h) {
  uint32_t low = (K < 2 ? lo : lo >> 4) & 0x0F0F0F0Fu;
  uint32_t high = (K == 0 ? h << 4 : K == 1 ? h << 2 : K == 2 ? h : h >> 2) & 0x30303030u;
  return low | high;
}
// (q - 32) . x for the four quants of v.
QV_DEVICE float q6_k_dot(uint32_t v, qv::float4 x, float acc) {
  uint32_t vh = v >> 16;
  qv::float4 q(field<0>(v, 63u, 32.0f), field<8>(v, 63u, 32.0f), field<0>(vh, 63u, 32.0f), field<8>(vh, 63u, 32.0f));
  return dot4_acc(q, x, acc);
}
// The int8 scale in byte `shift / 8` of word s.
QV_DEVICE float q6_k_scale(uint32_t s, uint32_t shift) { return field<0>((s >> shift) ^ 0x80u, 255u, 128.0f); }

// Group j of the q6_k block at word b: xk0, xk1 are x at elements 128n + 32k + l, l + 4.
QV_DEVICE float q6_k_group(const uint16_t* w, const qv::half* scales, uint32_t b, uint32_t j, qv::float4 x00,
                           qv::float4 x01, qv::float4 x10, qv::float4 x11, qv::float4 x20, qv::float4 x21,
                           qv::float4 x30, qv::float4 x31) {
  uint32_t n = j / 4, li = j % 4;
  const uint16_t* ql = w + b + 32 * n + 4 * li;        // ql bytes 64n + 8 li ..; 16 words further: + 32
  const uint16_t* qh = w + b + 64 + 16 * n + 4 * li;   // qh bytes 32n + 8 li ..
  const uint16_t* sc = w + b + 96 + 4 * n;             // scale 8n + 2k + li / 2: byte li / 2 of word k
  uint32_t a0 = word_pair(ql[0], ql[1]), a1 = word_pair(ql[2], ql[3]);
  uint32_t c0 = word_pair(ql[16], ql[17]), c1 = word_pair(ql[18], ql[19]);
  uint32_t h0 = word_pair(qh[0], qh[1]), h1 = word_pair(qh[2], qh[3]);
  uint32_t shift = 8 * (li / 2);
  float s0 = q6_k_dot(q6_k_quants<0>(a1, h1), x01, q6_k_dot(q6_k_quants<0>(a0, h0), x00, 0.0f));
  float s1 = q6_k_dot(q6_k_quants<1>(c1, h1), x11, q6_k_dot(q6_k_quants<1>(c0, h0), x10, 0.0f));
  float s2 = q6_k_dot(q6_k_quants<2>(a1, h1), x21, q6_k_dot(q6_k_quants<2>(a0, h0), x20, 0.0f));
  float s3 = q6_k_dot(q6_k_quants<3>(c1, h1), x31, q6_k_dot(q6_k_quants<3>(c0, h0), x30, 0.0f));
  float sum = qv::fma(q6_k_scale(sc[3], shift), s3,
                      qv::fma(q6_k_scale(sc[2], shift), s2,
                              qv::fma(q6_k_scale(sc[1], shift), s1, q6_k_scale(sc[0], shift) * s0)));
  return static_cast<float>(scales[b + 104]) * sum;
}

QV_DEVICE void q6_k_step(const uint16_t* w, const qv::half* scales, const float* x, uint32_t b0, uint32_t b1,
                         uint32_t b, uint32_t j, float& acc0, float& acc1) {
  const float* xg = x + b * kKBlock + 128 * (j / 4) + 8 * (j % 4);   // element l of k = 0; k steps by 32
  qv::float4 x00 = qv::load<4>(xg), x01 = qv::load<4>(xg + 4), x10 = qv::load<4>(xg + 32),
             x11 = qv::load<4>(xg + 36), x20 = qv::load<4>(xg + 64), x21 = qv::load<4>(xg + 68),
             x30 = qv::load<4>(xg + 96), x31 = qv::load<4>(xg + 100);
  acc0 += q6_k_group(w, scales, b0, j, x00, x01, x10, x11, x20, x21, x30, x31);
  acc1 += q6_k_group(w, scales, b1, j, x00, x01, x10, x11, x20, x21, x30, x31);
}

// Group j of block b in both rows (their blocks at words b0 and b1), x loaded once for both.
template <Quant F>
QV_DEVICE void quant_step(const uint16_t* w, const qv::half* scales, const float* x, uint32_t b0, uint32_t b1,
                          uint32_t b, uint32_t j, float& acc0, float& acc1) {
  if constexpr (F == Quant::Q4_K) {
    q4_k_step(w, scales, x, b0, b1, b, j, acc0, acc1);
  } else if constexpr (F == Quant::Q6_K) {
    q6_k_step(w, scales, x, b0, b1, b, j, acc0, acc1);
  } else {
    constexpr bool q4 = F == Quant::Q4_0;
    uint32_t at = b * kQBlock + j * (q4 ? 4 : 8);
    qv::float4 x0 = qv::load<4>(x + at), x1 = qv::load<4>(x + at + (q4 ? 16 : 4));
    acc0 += quant_group<F>(w, scales, b0, j, x0, x1);
    acc1 += quant_group<F>(w, scales, b1, j, x0, x1);
  }
}

// Row pairs through qvops::pair_row / store_pair (common.h).
template <Quant F>
QV_DEVICE void matvec_quant_rows(const uint16_t* w, const qv::half* scales, const float* x, float* y, uint32_t rows,
                                 uint32_t cols) {
  constexpr uint32_t words = quant_words<F>(), groups = quant_groups<F>();
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t blocks = cols / quant_elems<F>();
  // Lanes sharing a block: `groups` (a group each) or, in smaller subgroups (subgroup sizes are
  // powers of two), all of them, each taking every per_block-th group.
  uint32_t per_block = sg < groups ? sg : groups;
  uint32_t first_j = lane % per_block, first_b = lane / per_block, stride = sg / per_block;
  for (uint32_t step = 0; step < pair_steps(sg); ++step) {
    bool valid0, valid1;
    uint32_t row1, row0 = pair_row(step, sg, rows, valid0, valid1, row1);
    uint32_t r0 = row0 * blocks * words, r1 = valid1 ? r0 + blocks * words : r0;   // row1's words
    float acc0 = 0.0f, acc1 = 0.0f;
    if (valid0) {
      // Every offset is an induction variable of b (no division or remainder per step). With
      // the subgroup size a constant of at least `groups` (PTX: 32) the second loop folds away;
      // one loop over j from first_j stayed a loop in the PTX (40 registers, 1.13 waves).
      for (uint32_t b = first_b; b < blocks; b += stride) {
        quant_step<F>(w, scales, x, r0 + b * words, r1 + b * words, b, first_j, acc0, acc1);
        for (uint32_t j = first_j + per_block; j < groups; j += per_block)
          quant_step<F>(w, scales, x, r0 + b * words, r1 + b * words, b, j, acc0, acc1);
      }
    }
    store_pair(y, row0, valid0, valid1, acc0, acc1);
  }
}

QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q8_0(const uint16_t* w, const qv::half* scales, const float* x, float* y,
                                                   uint32_t rows, uint32_t cols) {
  matvec_quant_rows<Quant::Q8_0>(w, scales, x, y, rows, cols);
}

QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_0(const uint16_t* w, const qv::half* scales, const float* x, float* y,
                                                   uint32_t rows, uint32_t cols) {
  matvec_quant_rows<Quant::Q4_0>(w, scales, x, y, rows, cols);
}

// llama.cpp's super-block formats (K-quants), 256 elements a block.
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_k(const uint16_t* w, const qv::half* scales, const float* x,
                                                   float* y, uint32_t rows, uint32_t cols) {
  matvec_quant_rows<Quant::Q4_K>(w, scales, x, y, rows, cols);
}

// 6-bit quants, the type of llama.cpp's Q4_K_M files' attn_v and ffn_down (half their layers) and
// output matrices.
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q6_k(const uint16_t* w, const qv::half* scales, const float* x,
                                                   float* y, uint32_t rows, uint32_t cols) {
  matvec_quant_rows<Quant::Q6_K>(w, scales, x, y, rows, cols);
}

// ---- Repacked q4_0 / q8_0: the layout and load_chunk are in matvec_repacked.h ---------------

// Block i (0 .. 3) of a chunk in both rows, x loaded once for both (one block's x live, not a
// chunk's): the lane's quant words of the two rows (v, and w for q8_0's blocks 2 and 3), their
// scales s; xl is x at the chunk's element 32 (l / 4), block i's 256 further.
template <bool Q8, uint32_t I>
QV_DEVICE void repacked_block(qv::vec<uint32_t, 4> v0, qv::vec<uint32_t, 4> w0, qv::vec<qv::half, 4> s0,
                              qv::vec<uint32_t, 4> v1, qv::vec<uint32_t, 4> w1, qv::vec<qv::half, 4> s1,
                              const float* xl, uint32_t p, float& a0, float& a1) {
  const float* xg = xl + 256 * I;
  qv::float4 x0 = qv::load<4>(xg + (Q8 ? 8 : 4) * p), x1 = qv::load<4>(xg + (Q8 ? 8 * p + 4 : 16 + 4 * p));
  float d0 = static_cast<float>(s0[I]), d1 = static_cast<float>(s1[I]);
  if constexpr (Q8) {
    constexpr uint32_t k = (2 * I) % 4;   // the block's two words in v (blocks 0, 1) or w (2, 3)
    a0 = qv::fma(d0, I < 2 ? q8_sum(v0[k], v0[k + 1], x0, x1) : q8_sum(w0[k], w0[k + 1], x0, x1), a0);
    a1 = qv::fma(d1, I < 2 ? q8_sum(v1[k], v1[k + 1], x0, x1) : q8_sum(w1[k], w1[k + 1], x0, x1), a1);
  } else {
    a0 = qv::fma(d0, q4_sum(v0[I] ^ 0x88888888u, x0, x1), a0);   // the nibbles back to q (stored q ^ 8)
    a1 = qv::fma(d1, q4_sum(v1[I] ^ 0x88888888u, x0, x1), a1);
  }
}

template <bool Q8>
QV_DEVICE void repacked_chunk(qv::vec<uint32_t, 4> v0, qv::vec<uint32_t, 4> w0, qv::vec<qv::half, 4> s0,
                              qv::vec<uint32_t, 4> v1, qv::vec<uint32_t, 4> w1, qv::vec<qv::half, 4> s1,
                              const float* xl, uint32_t p, float& a0, float& a1) {
  repacked_block<Q8, 0>(v0, w0, s0, v1, w1, s1, xl, p, a0, a1);
  repacked_block<Q8, 1>(v0, w0, s0, v1, w1, s1, xl, p, a0, a1);
  repacked_block<Q8, 2>(v0, w0, s0, v1, w1, s1, xl, p, a0, a1);
  repacked_block<Q8, 3>(v0, w0, s0, v1, w1, s1, xl, p, a0, a1);
}

// K chunks c .. c + K - 1 (K = 1, 2 or 4) of both rows, every load issued before any arithmetic:
// a lane then has 2 K 16-byte loads in flight (4 K for q8_0), where loading a chunk just before
// its arithmetic kept too few bytes in flight to hide DRAM latency (q4_0 14336 x 4096 on the
// H100: 1564 GB/s a chunk at a time, 1590 two at a time, 1676 four; docs/perf/NOTES.md).
template <bool Q8, uint32_t K>
QV_DEVICE void repacked_chunks(const uint32_t* q, uint32_t o0, uint32_t o1, const qv::half* s, uint32_t so0,
                               uint32_t so1, const float* xl, uint32_t c, uint32_t p, float& a0, float& a1) {
  qv::vec<uint32_t, 4> v0, w0, v1, w1, v2, w2, v3, w3, v4, w4, v5, w5, v6, w6, v7, w7;
  qv::vec<qv::half, 4> t0, t1, t2, t3, t4, t5, t6, t7;
  load_chunk<Q8>(q, o0, s, so0, c, v0, w0, t0);
  load_chunk<Q8>(q, o1, s, so1, c, v1, w1, t1);
  if constexpr (K >= 2) {
    load_chunk<Q8>(q, o0, s, so0, c + 1, v2, w2, t2);
    load_chunk<Q8>(q, o1, s, so1, c + 1, v3, w3, t3);
  }
  if constexpr (K == 4) {
    load_chunk<Q8>(q, o0, s, so0, c + 2, v4, w4, t4);
    load_chunk<Q8>(q, o1, s, so1, c + 2, v5, w5, t5);
    load_chunk<Q8>(q, o0, s, so0, c + 3, v6, w6, t6);
    load_chunk<Q8>(q, o1, s, so1, c + 3, v7, w7, t7);
  }
  repacked_chunk<Q8>(v0, w0, t0, v1, w1, t1, xl + c * 1024, p, a0, a1);
  if constexpr (K >= 2) repacked_chunk<Q8>(v2, w2, t2, v3, w3, t3, xl + (c + 1) * 1024, p, a0, a1);
  if constexpr (K == 4) {
    repacked_chunk<Q8>(v4, w4, t4, v5, w5, t5, xl + (c + 2) * 1024, p, a0, a1);
    repacked_chunk<Q8>(v6, w6, t6, v7, w7, t7, xl + (c + 3) * 1024, p, a0, a1);
  }
}

// As matvec_quant_rows: blocks of kQuantThreads threads and kQuantRows rows, a subgroup per two
// rows at a time (qvops::pair_row); a subgroup's lanes take layout lanes lane, lane + size, ... < 32 (lanes past 32 of a wider subgroup add zeros). Splitting a
// row pair's chunks between subgroups (for the short K / V and 4096-row matrices) was slower on
// the H100 at every Llama-3-8B shape (docs/perf/NOTES.md).
template <bool Q8>
QV_DEVICE void matvec_repacked(const uint32_t* q, const qv::half* scales, const float* x, float* y, uint32_t rows,
                               uint32_t cols) {
  constexpr uint32_t WB = Q8 ? 8 : 4;
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t blocks = cols / kQBlock, chunks = blocks / kChunkBlocks;
  const qv::half* row_scales = scales + 2 * rows * blocks * WB;   // the scales follow the quant words
  for (uint32_t step = 0; step < pair_steps(sg); ++step) {
    bool valid0, valid1;
    uint32_t row1, row0 = pair_row(step, sg, rows, valid0, valid1, row1);
    float a0 = 0.0f, a1 = 0.0f;
    if (valid0) {
      for (uint32_t l = lane; l < kChunkLanes; l += sg) {
        uint32_t o0 = row0 * blocks * WB + WB * l, o1 = row1 * blocks * WB + WB * l;
        uint32_t so0 = row0 * blocks + 4 * (l / 4), so1 = row1 * blocks + 4 * (l / 4);
        const float* xl = x + 32 * (l / 4);
        // q4_0: four chunks at a time (eight 16-byte loads in flight, 72 registers on sm_90a);
        // q8_0: one (four loads; two chunks took 72 registers, one 52).
        uint32_t c = 0;
        if constexpr (!Q8) {
          for (; c + 4 <= chunks; c += 4) repacked_chunks<Q8, 4>(q, o0, o1, row_scales, so0, so1, xl, c, l % 4, a0, a1);
          if (c + 2 <= chunks) {
            repacked_chunks<Q8, 2>(q, o0, o1, row_scales, so0, so1, xl, c, l % 4, a0, a1);
            c += 2;
          }
        }
        for (; c < chunks; ++c) repacked_chunks<Q8, 1>(q, o0, o1, row_scales, so0, so1, xl, c, l % 4, a0, a1);
      }
    }
    store_pair(y, row0, valid0, valid1, a0, a1);
  }
}

QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_0r(const uint32_t* q, const qv::half* scales, const float* x,
                                                    float* y, uint32_t rows, uint32_t cols) {
  matvec_repacked<false>(q, scales, x, y, rows, cols);
}
QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q8_0r(const uint32_t* q, const qv::half* scales, const float* x,
                                                    float* y, uint32_t rows, uint32_t cols) {
  matvec_repacked<true>(q, scales, x, y, rows, cols);
}

// ---- int8 activations (ops::quantize_activations_q8, matvec_q4_0r_a8 / q8_0r_a8) ---------------------
// x quantized per 32-element block, as llama.cpp quantizes the activations of its integer-dot
// matvecs: d = max|x| / 127, q = x / d rounded to nearest (ties away from zero); a block of zeros
// gets d = 0, q = 0. The layout is planar so that a matvec lane's quants are aligned words: the n
// int8 quants (as n / 4 words, xq), then the n / 32 float d (xd, from byte n).
// A decode step quantizes a vector of a few thousand elements before its products, so the launch
// is latency, not bandwidth: a thread per 4 elements (a word of quants), 8 threads a block, the
// block's maximum through workgroup memory (any subgroup size), kQuantizeThreads / 8 blocks a
// workgroup. (A thread per block, 32 elements in a serial loop, took ~4 us a launch on an H200,
// more than the integer matvecs saved in a Q4_0 decode step.)

QV_KERNEL QV_BLOCK(kQuantizeThreads) void quantize_activations_q8(const float* x, uint32_t* xq, float* xd,
                                                                 uint32_t n) {
  qv::shared<float, kQuantizeThreads> part;   // each thread's max|x| over its 4 elements
  uint32_t t = qv::thread_id_x();
  uint32_t word = qvops::block_row() * kQuantizeThreads + t;   // this thread's 4 elements: 4 word ..
  bool valid = word < n / 4;   // n is a multiple of 32: a block's 8 threads are all valid or none
  qv::float4 v = valid ? qv::load<4>(x + 4 * word) : qv::float4(0.0f, 0.0f, 0.0f, 0.0f);
  float d = qvops::q8_quantize(part, t, v, valid, xq, word);
  if (valid && t % 8 == 0) xd[n / 4 + word / 8] = d;   // xd is xq's buffer: the scales start at byte n
}

// How many chunks' loads a lane issues before their arithmetic differs by format and target
// (quiver-bench and a Q4_0 / Q8_0 decode step on an H200, docs/perf/NOTES.md): q4_0 two on PTX
// (four: 56 registers and 1.51 waves at 14336 x 4096, 0.81 of a same-size copy; two: 0.86), four
// through NVIDIA's Vulkan driver; q8_0 one everywhere (its chunk is already two 16-byte loads a
// row). runtime/ops takes matvec_q4_0r_a8_k4 where the loaded image has it (SPIR-V, and MSL,
// which is made from the SPIR-V kernels). Each comes with a `_split` kernel of 2 row pairs a
// block (qvops::split_row) for the products of at most 4096 rows: on an H200 those gained 5-25%
// (q4_0r_a8 4096 x 14336 1979 -> 2266 GB/s) and the larger ones lost 5-10%.
#define QV_REPACKED_A8(name, targets, Q8, K, P)                                                              \
  QV_KERNEL QV_BLOCK(kQuantThreads) targets void name(const uint32_t* q, const qv::half* scales, const uint32_t* xq, \
                                                      const float* xd, float* y, uint32_t rows, uint32_t cols) {     \
    matvec_repacked_a8<Q8, K, P>(q, scales, xq, xd, y, rows, cols);                                                 \
  }
QV_REPACKED_A8(matvec_q4_0r_a8, QV_TARGETS(ptx, hsaco, wgsl, cpu), false, 2, 4)
QV_REPACKED_A8(matvec_q4_0r_a8_split, QV_TARGETS(ptx, hsaco, wgsl, cpu), false, 2, 2)
QV_REPACKED_A8(matvec_q4_0r_a8_k4, QV_TARGETS(spirv, msl), false, 4, 4)
QV_REPACKED_A8(matvec_q4_0r_a8_k4_split, QV_TARGETS(spirv, msl), false, 4, 2)
QV_REPACKED_A8(matvec_q8_0r_a8, , true, 1, 4)
QV_REPACKED_A8(matvec_q8_0r_a8_split, , true, 1, 2)
#undef QV_REPACKED_A8
// Four rows a subgroup (qvops::quad_row): the q4_0r products of at least 8192 rows (runtime/ops).
QV_KERNEL QV_BLOCK(kQuantThreads) QV_TARGETS(ptx, hsaco, spirv, msl) void matvec_q4_0r_a8_rows4(
    const uint32_t* q, const qv::half* scales, const uint32_t* xq, const float* xd, float* y, uint32_t rows,
    uint32_t cols) {
  qvops::matvec_q4_0r_a8_quads(q, scales, xq, xd, y, rows, cols);
}

template void matvec<float>(const float*, const float*, float*, uint32_t, uint32_t);
template void matvec<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void matvec<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t);
template void matvec_w16<qv::bf16>(const qv::bf16*, const float*, float*, uint32_t, uint32_t);
template void matvec_w16<qv::half>(const qv::half*, const float*, float*, uint32_t, uint32_t);
