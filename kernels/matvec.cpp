// Matrix-vector products for decoding (batch 1): y[n] = sum_k W[n, k] x[k] with W row-major
// [rows][cols] (a linear layer's weight, out_features x in_features). matvec: a block per four
// output rows; the quantized forms: a subgroup per two (below). Threads stride along the rows
// (coalesced) and accumulate in float.
//
// The block-quantized forms keep llama.cpp's byte layouts, so GGUF tensors can be uploaded as
// they are (one row = cols / 32 consecutive blocks):
//   q8_0: 34 bytes per block = f16 scale d, then 32 int8 q;                w = d * q
//   q4_0: 18 bytes per block = f16 scale d, then 16 bytes; byte j holds element j in its low
//         nibble and element j + 16 in its high nibble;                    w = d * (nibble - 8)
// Dequantisation happens in the kernel; d * q is exact in float (11-bit by 8-bit significands).
#include "common.h"

using qvops::from_f32;
using qvops::kRowThreads;

constexpr uint32_t kQBlock = 32;         // elements per quantization block
constexpr uint32_t kQ8Words = 17;        // 16-bit words per q8_0 block (34 bytes)
constexpr uint32_t kQ4Words = 9;         // 16-bit words per q4_0 block (18 bytes)
constexpr uint32_t kMatvecRows = 4;      // output rows per block (runtime/ops/ops.cpp sizes the grid)

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

template <uint32_t W, typename T>
QV_DEVICE void matvec_rows(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
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
      qvops::load16(x + c, a0, a1);
      qvops::load16(x + c + s, b0, b1);
      acc0 = dot_chunk(w0 + c + s, b0, b1, dot_chunk(w0 + c, a0, a1, acc0));
      acc1 = dot_chunk(w1 + c + s, b0, b1, dot_chunk(w1 + c, a0, a1, acc1));
      acc2 = dot_chunk(w2 + c + s, b0, b1, dot_chunk(w2 + c, a0, a1, acc2));
      acc3 = dot_chunk(w3 + c + s, b0, b1, dot_chunk(w3 + c, a0, a1, acc3));
    }
    if (c < cols) {
      qv::float4 a0, a1 = zero;
      qvops::load16(x + c, a0, a1);
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
    y[row0] = from_f32<T>(sum0);
    if (row0 + 1 < rows) y[row0 + 1] = from_f32<T>(sum1);
    if (row0 + 2 < rows) y[row0 + 2] = from_f32<T>(sum2);
    if (row0 + 3 < rows) y[row0 + 3] = from_f32<T>(sum3);
  }
}

template <typename T>
QV_KERNEL QV_BLOCK(kRowThreads) void matvec(const T* w, const T* x, T* y, uint32_t rows, uint32_t cols) {
  constexpr uint32_t E = qvops::chunk_elems<T>();
  if (cols % E == 0) matvec_rows<E>(w, x, y, rows, cols);
  else if (cols % 4 == 0) matvec_rows<4>(w, x, y, rows, cols);
  else matvec_rows<1>(w, x, y, rows, cols);
}

// ---- Block-quantized forms ------------------------------------------------------------------
// The weights are read as 16-bit words (blocks are 34 and 18 bytes, so every block starts on a
// word): the host binds the byte buffer twice, as uint16_t `w` and as qv::half `scales` (a
// block's scale is half `b` where word `b` starts it), and the integers become floats through
// their bits (field() below). Byte loads, the integer-to-float converter (a quarter of the float
// rate on NVIDIA) and a bit-by-bit f16 decoding per 4 elements made these kernels issue-bound on
// the H100 at 0.44 (q8_0) and 0.22 (q4_0) of copy bandwidth.
//
// A subgroup works on two rows at once, so each x value it loads serves both (x is f32: 4 bytes
// per weight element, 3.8x the q8_0 weight bytes and 7x the q4_0 ones). Lane l takes group
// j = l % 4 (8 elements) of blocks l / 4, l / 4 + sg / 4, ..., so consecutive lanes read
// consecutive words and every offset steps by a constant (a loop over 8-element groups with a
// division and remainder per step spent ~30 of ~114 instructions per step on addresses: q4_0
// 1268 -> 1337 GB/s, q8_0 1900 -> 2004 on the H100). Blocks of 128 threads and 8 rows, 32
// registers: 1792 blocks for 14336 rows are one wave on the H100 at full occupancy; 256-thread
// blocks of 16 rows with two groups per step (40 registers) ran 1.13 waves. Slower, not kept
// (docs/perf/NOTES.md): staging the rows through shared memory with qv::copy_async (q4_0 1026,
// ~40% more instructions) and prefetching the rows into L2 (q4_0 1136 all at once, 1280 four
// steps ahead).
constexpr uint32_t kQuantThreads = 128;
constexpr uint32_t kQuantRows = 8;   // output rows per block (runtime/ops/ops.cpp sizes the grid)

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
QV_DEVICE float q8_dot(uint32_t a, uint32_t b, float d, qv::float4 x0, qv::float4 x1) {
  a ^= 0x80808080u;
  b ^= 0x80808080u;
  uint32_t ah = a >> 16, bh = b >> 16;
  qv::float4 lo(field<0>(a, 255u, 128.0f), field<8>(a, 255u, 128.0f), field<0>(ah, 255u, 128.0f), field<8>(ah, 255u, 128.0f));
  qv::float4 hi(field<0>(b, 255u, 128.0f), field<8>(b, 255u, 128.0f), field<0>(bh, 255u, 128.0f), field<8>(bh, 255u, 128.0f));
  return d * dot4_acc(hi, x1, dot4_acc(lo, x0, 0.0f));
}

// d * ((q - 8) . x) for one q4_0 group: 4 bytes p of the block's 16, whose low nibbles are
// elements 4j .. 4j + 3 (x0) and high nibbles 4j + 16 .. 4j + 19 (x1).
QV_DEVICE float q4_dot(uint32_t p, float d, qv::float4 x0, qv::float4 x1) {
  uint32_t ph = p >> 16;
  qv::float4 lo(field<0>(p, 15u, 8.0f), field<8>(p, 15u, 8.0f), field<16>(p, 15u, 8.0f), field<8>(ph, 15u, 8.0f));
  qv::float4 hi(field<4>(p, 15u, 8.0f), field<12>(p, 15u, 8.0f), field<4>(ph, 15u, 8.0f), field<12>(ph, 15u, 8.0f));
  return d * dot4_acc(hi, x1, dot4_acc(lo, x0, 0.0f));
}

QV_DEVICE uint32_t word_pair(uint32_t lo, uint32_t hi) { return lo | (hi << 16); }

// Group g (block g / 4, group j = g % 4 in it) of the rows at words r0 and r1, x loaded once for
// both: x[32 (g / 4) + 8 j] and the next 4 for q8_0, x[32 (g / 4) + 4 j] and 16 further for q4_0;
// the quants are words 1 + 2j, 2 + 2j (q4_0) or 1 + 4j .. 4 + 4j (q8_0) of the block.
template <bool Q4>
QV_DEVICE float quant_group(const uint16_t* w, const qv::half* scales, uint32_t b, uint32_t j, qv::float4 x0,
                            qv::float4 x1) {
  float d = static_cast<float>(scales[b]);
  const uint16_t* q = w + b + (Q4 ? 2 : 4) * j;   // one address; the words are at fixed offsets from it
  if constexpr (Q4) return q4_dot(word_pair(q[1], q[2]), d, x0, x1);
  else return q8_dot(word_pair(q[1], q[2]), word_pair(q[3], q[4]), d, x0, x1);
}

// Quarter j of block b in both rows (their blocks at words b0 and b1), x loaded once for both.
template <bool Q4>
QV_DEVICE void quant_step(const uint16_t* w, const qv::half* scales, const float* x, uint32_t b0, uint32_t b1,
                          uint32_t b, uint32_t j, float& acc0, float& acc1) {
  uint32_t at = b * kQBlock + j * (Q4 ? 4 : 8);
  qv::float4 x0 = qv::load<4>(x + at), x1 = qv::load<4>(x + at + (Q4 ? 16 : 4));
  acc0 += quant_group<Q4>(w, scales, b0, j, x0, x1);
  acc1 += quant_group<Q4>(w, scales, b1, j, x0, x1);
}

// The step count is block-uniform and subgroup_sum sits outside any thread-dependent branch
// (WGSL's uniformity analysis requires it); a subgroup without rows adds zeros.
template <bool Q4>
QV_DEVICE void matvec_quant_rows(const uint16_t* w, const qv::half* scales, const float* x, float* y, uint32_t rows,
                                 uint32_t cols) {
  constexpr uint32_t words = Q4 ? kQ4Words : kQ8Words;
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t subgroups = (kQuantThreads + sg - 1) / sg;
  uint32_t blocks = cols / kQBlock;
  // Lanes sharing a block: 4 (a quarter each) or, in subgroups of 1 or 2 (subgroup sizes are
  // powers of two), all of them, each taking every per_block-th quarter.
  uint32_t per_block = sg < 4 ? sg : 4;
  uint32_t first_j = lane % per_block, first_b = lane / per_block, stride = sg / per_block;
  for (uint32_t step = 0; step < (kQuantRows + 2 * subgroups - 1) / (2 * subgroups); ++step) {
    uint32_t pair = qv::thread_id_x() / sg + step * subgroups;   // rows 2 pair, 2 pair + 1 of the block's
    uint32_t row0 = qvops::block_row() * kQuantRows + 2 * pair;
    bool valid0 = 2 * pair < kQuantRows && row0 < rows, valid1 = valid0 && row0 + 1 < rows;
    uint32_t r0 = row0 * blocks * words, r1 = valid1 ? r0 + blocks * words : r0;   // an absent row 1 re-reads row 0
    float acc0 = 0.0f, acc1 = 0.0f;
    if (valid0) {
      // Every offset is an induction variable of b (no division or remainder per step). With
      // the subgroup size a constant of at least 4 (PTX: 32) the second loop folds away; one
      // loop over j from first_j stayed a loop in the PTX (40 registers, 1.13 waves).
      for (uint32_t b = first_b; b < blocks; b += stride) {
        quant_step<Q4>(w, scales, x, r0 + b * words, r1 + b * words, b, first_j, acc0, acc1);
        for (uint32_t j = first_j + per_block; j < 4; j += per_block)
          quant_step<Q4>(w, scales, x, r0 + b * words, r1 + b * words, b, j, acc0, acc1);
      }
    }
    float sum0 = qv::subgroup_sum(acc0), sum1 = qv::subgroup_sum(acc1);
    if (valid0 && lane == 0) y[row0] = sum0;
    if (valid1 && lane == 0) y[row0 + 1] = sum1;
  }
}

QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q8_0(const uint16_t* w, const qv::half* scales, const float* x, float* y,
                                                   uint32_t rows, uint32_t cols) {
  matvec_quant_rows<false>(w, scales, x, y, rows, cols);
}

QV_KERNEL QV_BLOCK(kQuantThreads) void matvec_q4_0(const uint16_t* w, const qv::half* scales, const float* x, float* y,
                                                   uint32_t rows, uint32_t cols) {
  matvec_quant_rows<true>(w, scales, x, y, rows, cols);
}

template void matvec<float>(const float*, const float*, float*, uint32_t, uint32_t);
template void matvec<qv::bf16>(const qv::bf16*, const qv::bf16*, qv::bf16*, uint32_t, uint32_t);
template void matvec<qv::half>(const qv::half*, const qv::half*, qv::half*, uint32_t, uint32_t);
