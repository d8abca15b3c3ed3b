// Scaled dot-product attention on the matrix units (docs/matrix.md), for half / bf16 inputs: the
// same contract as kernels/attention.cpp (layouts, grouped-query heads, causal offset, KV caches
// with spare capacity), FlashAttention-2's schedule:
//
// A block of 4 warps takes 64 query rows of one (batch, head); warp w owns rows 16 w .. 16 w + 15
// and keeps, per row, the running maximum m and denominator l (as row-broadcast accumulators:
// qv::row_max / qv::row_sum) and the unnormalised output O, D / 16 accumulators. K and V stream
// through shared memory 64 keys at a time, double-buffered with qv::copy_async so the next
// tile's loads fly while the warps work on this one. Per tile, per warp:
//   S = Q K^T (16 x 64: four accumulators, D / 16 deep), scaled by scale * log2(e)
//   m' = max(m, rowmax S);  P = exp2(S - m');  l = l exp2(m - m') + rowsum P
//   O = O exp2(m - m') + T(P) V            (qv::to_matrix_a: P stays in registers)
// and at the end O / l goes through shared memory (so rows past q_len are not written) to o.
// Rounding P to T before P V is what FlashAttention does too; the op gate's bound counts it.
//
// Masks cost no memory traffic: the tiles that need one (the causal diagonal, the last keys)
// add min(0, limit - index) * 2^100 to S, where index is a constant tile of j - i (causal) or j
// (KV length) loaded once from shared memory: a masked score becomes <= -2^100 and exp2 gives 0.
// The first tile always has a visible key in every row (key 0), so m is finite from then on.
//
// Built for PTX sm_80 (attention_tiles) and, for half, for SPIR-V's cooperative-matrix image
// (attention_tiles_lean: the accumulator's row statistics, exp2 and to_matrix_a run on lane
// shares there, docs/matrix.md). The lean variant fits NVIDIA's Vulkan limit of 48 KiB of
// shared memory a block: one K/V stage instead of two, and Q held as left-operand tiles in
// registers, its shared memory reused for K and V. Elsewhere the fallback tiles would be slower
// than kernels/attention.cpp, which the op library keeps using there (and for float).
#include "common.h"

constexpr uint32_t kTileQ = 64;   // query rows per block, 16 per warp
constexpr uint32_t kTileK = 64;   // keys per step
constexpr uint32_t kTileThreads = 128;

namespace {

// One array of T: [64][row] Q (later O on its way out), then two buffers of K [64][row] and
// V [64][row]. Rows padded by 8 elements (16 bytes): the eight rows one ldmatrix reads fall in
// different banks. Lean: one K/V buffer, and Q / O pass through its first rows.
template <uint32_t D, bool Lean = false>
struct TileSmem {
  static constexpr uint32_t row = D + 8;
  static constexpr uint32_t q = 0;
  static constexpr uint32_t kv = Lean ? 0 : kTileQ * row;
  static constexpr uint32_t stage = 2 * kTileK * row;   // K then V
  static constexpr uint32_t size = kv + (Lean ? 1 : 2) * stage;
};

constexpr float kMaskScale = 1.2676506e30f;   // 2^100

// Thread t's part of a [64][D] tile: chunks of 8 elements, c = t + 128 i.
template <uint32_t D>
QV_DEVICE uint32_t chunk_row(uint32_t c) { return c / (D / 8); }
template <uint32_t D>
QV_DEVICE uint32_t chunk_col(uint32_t c) { return 8 * (c % (D / 8)); }

// Keys k0 .. k0 + 63 of K and V into buffer `buf`; keys at or past kv_len become zeros (never
// read: the spare capacity of a KV cache may hold anything, NaN included).
template <typename T, uint32_t D, bool Lean>
QV_DEVICE void load_kv(qv::shared<T, TileSmem<D, Lean>::size>& sm, const T* k, const T* v, uint32_t kv_base,
                       uint32_t kv_seq_stride, uint32_t kv_len, uint32_t k0, uint32_t buf, uint32_t t) {
  using S = TileSmem<D, Lean>;
  uint32_t base = S::kv + buf * S::stage;
  for (uint32_t c = t; c < kTileK * D / 8; c += kTileThreads) {
    uint32_t j = chunk_row<D>(c), d = chunk_col<D>(c);
    uint32_t at = base + j * S::row + d;
    if (k0 + j < kv_len) {
      uint32_t src = kv_base + (k0 + j) * kv_seq_stride + d;
      qv::copy_async(&sm[at], k + src);
      qv::copy_async(&sm[at + kTileK * S::row], v + src);
    } else {
      qv::store(&sm[at], qv::vec<T, 8>());
      qv::store(&sm[at + kTileK * S::row], qv::vec<T, 8>());
    }
  }
}

// S += min(0, limit - index) * 2^100: entries with index > limit sink to <= -2^100.
QV_DEVICE qv::matrix_acc<float> mask(qv::matrix_acc<float> s, qv::matrix_acc<float> index, float limit) {
  return s + qv::min(qv::matrix_acc<float>(0.0f), qv::matrix_acc<float>(limit) - index) * kMaskScale;
}

// S_n += Q[:, kk .. kk + 15] K[16 n .. 16 n + 15, kk .. kk + 15]^T: one 16-deep step of the scores;
// `qa` and `kb` already point at column kk of the warp's Q rows and of the K tile. Lean: `q`
// holds those Q columns already.
template <typename T, uint32_t D, bool Lean>
QV_DEVICE void accumulate_qk(const qv::shared<T, TileSmem<D, Lean>::size>& sm, uint32_t qa, const qv::matrix_a<T>& q,
                             uint32_t kb, qv::matrix_acc<float>& s0, qv::matrix_acc<float>& s1,
                             qv::matrix_acc<float>& s2, qv::matrix_acc<float>& s3) {
  using S = TileSmem<D, Lean>;
  qv::matrix_a<T> a;
  if constexpr (Lean) a = q;
  else a = qv::load_matrix_a(&sm[qa], S::row);
  s0 = qv::mma(a, qv::load_matrix_b_transposed(&sm[kb], S::row), s0);
  s1 = qv::mma(a, qv::load_matrix_b_transposed(&sm[kb + 16 * S::row], S::row), s1);
  s2 = qv::mma(a, qv::load_matrix_b_transposed(&sm[kb + 32 * S::row], S::row), s2);
  s3 = qv::mma(a, qv::load_matrix_b_transposed(&sm[kb + 48 * S::row], S::row), s3);
}

// O_j += P V_j for the 16 keys of one accumulator of P; V rows at `vb`, D / 16 column tiles.
template <typename T, uint32_t D, bool Lean>
QV_DEVICE void accumulate_pv(const qv::shared<T, TileSmem<D, Lean>::size>& sm, uint32_t vb, qv::matrix_acc<float> p,
                             qv::matrix_acc<float>& o0, qv::matrix_acc<float>& o1, qv::matrix_acc<float>& o2,
                             qv::matrix_acc<float>& o3, qv::matrix_acc<float>& o4, qv::matrix_acc<float>& o5,
                             qv::matrix_acc<float>& o6, qv::matrix_acc<float>& o7) {
  using S = TileSmem<D, Lean>;
  qv::matrix_a<T> pa = qv::to_matrix_a<T>(p);
  o0 = qv::mma(pa, qv::load_matrix_b(&sm[vb], S::row), o0);
  o1 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 16], S::row), o1);
  o2 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 32], S::row), o2);
  o3 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 48], S::row), o3);
  if constexpr (D == 128) {
    o4 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 64], S::row), o4);
    o5 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 80], S::row), o5);
    o6 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 96], S::row), o6);
    o7 = qv::mma(pa, qv::load_matrix_b(&sm[vb + 112], S::row), o7);
  }
}

// (P V)[:, c .. c + 15] for the 64 keys of this step (P as four left operands): V columns at `vc`.
template <typename T, uint32_t D, bool Lean>
QV_DEVICE qv::matrix_acc<float> pv_column(const qv::shared<T, TileSmem<D, Lean>::size>& sm, uint32_t vc,
                                          const qv::matrix_a<T>& p0, const qv::matrix_a<T>& p1,
                                          const qv::matrix_a<T>& p2, const qv::matrix_a<T>& p3) {
  using S = TileSmem<D, Lean>;
  qv::matrix_acc<float> acc = qv::mma(p0, qv::load_matrix_b(&sm[vc], S::row), qv::matrix_acc<float>());
  acc = qv::mma(p1, qv::load_matrix_b(&sm[vc + 16 * S::row], S::row), acc);
  acc = qv::mma(p2, qv::load_matrix_b(&sm[vc + 32 * S::row], S::row), acc);
  return qv::mma(p3, qv::load_matrix_b(&sm[vc + 48 * S::row], S::row), acc);
}

template <typename T, uint32_t D, bool Lean>
QV_DEVICE void attention_tiles_block(const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads,
                                     uint32_t q_len, uint32_t kv_len, uint32_t q_head_stride, uint32_t q_seq_stride,
                                     uint32_t kv_head_stride, uint32_t kv_seq_stride, uint32_t kv_batch_stride,
                                     float scale, bool causal) {
  using S = TileSmem<D, Lean>;
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  qv::shared<T, S::size> sm;
  qv::shared<float, 512> index;   // [16][16] j - i, then [16][16] j

  uint32_t t = qv::thread_id_x();
  uint32_t warp = t / 32;   // 32-lane subgroups: PTX, and the lane shares of SPIR-V
  uint32_t q0 = qv::block_id_x() * kTileQ;
  uint32_t h = qv::block_id_y(), b = qv::block_id_z();
  uint32_t g = h / (q_heads / kv_heads);
  uint32_t q_base = b * q_heads * q_len * D + h * q_head_stride;
  uint32_t kv_base = b * kv_batch_stride + g * kv_head_stride;
  uint32_t offset = kv_len - q_len;   // absolute position of query 0 (host: kv_len >= q_len if causal)
  uint32_t last_row = q0 + kTileQ < q_len ? q0 + kTileQ : q_len;
  uint32_t kv_end = causal && offset + last_row < kv_len ? offset + last_row : kv_len;
  uint32_t tiles = (kv_end + kTileK - 1) / kTileK;

  for (uint32_t e = t; e < 256; e += kTileThreads) {
    index[e] = float(e % 16) - float(e / 16);
    index[256 + e] = float(e % 16);
  }
  // Q (rows past q_len: zeros) and the first K/V tile: one group.
  for (uint32_t c = t; c < kTileQ * D / 8; c += kTileThreads) {
    uint32_t i = chunk_row<D>(c), d = chunk_col<D>(c);
    if (q0 + i < q_len) qv::copy_async(&sm[S::q + i * S::row + d], q + q_base + (q0 + i) * q_seq_stride + d);
    else qv::store(&sm[S::q + i * S::row + d], qv::vec<T, 8>());
  }
  if constexpr (!Lean) load_kv<T, D, Lean>(sm, k, v, kv_base, kv_seq_stride, kv_len, 0, 0, t);
  qv::copy_async_commit();

  const float scale_log2 = scale * 1.44269504f;
  const uint32_t qa = S::q + 16 * warp * S::row;   // the warp's 16 rows of Q
  const uint32_t row_first = offset + q0 + 16 * warp;   // position of the warp's first query
  qv::matrix_a<T> q0t, q1t, q2t, q3t, q4t, q5t, q6t, q7t;   // Lean: the warp's Q, 16 columns each
  if constexpr (Lean) {
    qv::copy_async_wait(0);
    qv::barrier();
    q0t = qv::load_matrix_a(&sm[qa], S::row);
    q1t = qv::load_matrix_a(&sm[qa + 16], S::row);
    q2t = qv::load_matrix_a(&sm[qa + 32], S::row);
    q3t = qv::load_matrix_a(&sm[qa + 48], S::row);
    if constexpr (D == 128) {
      q4t = qv::load_matrix_a(&sm[qa + 64], S::row);
      q5t = qv::load_matrix_a(&sm[qa + 80], S::row);
      q6t = qv::load_matrix_a(&sm[qa + 96], S::row);
      q7t = qv::load_matrix_a(&sm[qa + 112], S::row);
    }
    qv::barrier();   // Q is in registers before K and V overwrite it
  }
  // m starts below every score, masked ones (>= -2^114) included, so the first tile's alpha is 0.
  qv::matrix_acc<float> m(-3.0e38f), l;
  qv::matrix_acc<float> o0, o1, o2, o3, o4, o5, o6, o7;
  for (uint32_t i = 0; i < tiles; ++i) {
    uint32_t k0 = i * kTileK, buf = Lean ? 0 : i % 2;
    if constexpr (Lean) {
      load_kv<T, D, Lean>(sm, k, v, kv_base, kv_seq_stride, kv_len, k0, 0, t);
      qv::copy_async_commit();
      qv::copy_async_wait(0);
    } else {
      if (i + 1 < tiles) load_kv<T, D, Lean>(sm, k, v, kv_base, kv_seq_stride, kv_len, k0 + kTileK, 1 - buf, t);
      qv::copy_async_commit();
      qv::copy_async_wait(1);   // tile i (and Q) landed for this thread
    }
    qv::barrier();            // ... and for every thread

    uint32_t kb = S::kv + buf * S::stage, vb = kb + kTileK * S::row;
    qv::matrix_acc<float> s0, s1, s2, s3;
    // Written out (a loop stays rolled): ptxas then overlaps the next step's fragment loads
    // with this step's products.
    accumulate_qk<T, D, Lean>(sm, qa, q0t, kb, s0, s1, s2, s3);
    accumulate_qk<T, D, Lean>(sm, qa + 16, q1t, kb + 16, s0, s1, s2, s3);
    accumulate_qk<T, D, Lean>(sm, qa + 32, q2t, kb + 32, s0, s1, s2, s3);
    accumulate_qk<T, D, Lean>(sm, qa + 48, q3t, kb + 48, s0, s1, s2, s3);
    if constexpr (D == 128) {
      accumulate_qk<T, D, Lean>(sm, qa + 64, q4t, kb + 64, s0, s1, s2, s3);
      accumulate_qk<T, D, Lean>(sm, qa + 80, q5t, kb + 80, s0, s1, s2, s3);
      accumulate_qk<T, D, Lean>(sm, qa + 96, q6t, kb + 96, s0, s1, s2, s3);
      accumulate_qk<T, D, Lean>(sm, qa + 112, q7t, kb + 112, s0, s1, s2, s3);
    }
    s0 *= scale_log2;
    s1 *= scale_log2;
    s2 *= scale_log2;
    s3 *= scale_log2;
    // Key k0 + 16 n + j is visible to query row_first + i iff (j - i) <= row_first - k0 - 16 n.
    if (causal && k0 + kTileK - 1 > row_first) {
      qv::matrix_acc<float> diag = qv::load_matrix_acc(&index[0], 16);
      float limit = float(row_first) - float(k0);
      s0 = mask(s0, diag, limit);
      s1 = mask(s1, diag, limit - 16.0f);
      s2 = mask(s2, diag, limit - 32.0f);
      s3 = mask(s3, diag, limit - 48.0f);
    }
    if (k0 + kTileK > kv_len) {   // key k0 + 16n + j exists iff j <= kv_len - 1 - k0 - 16n
      qv::matrix_acc<float> col = qv::load_matrix_acc(&index[256], 16);
      float limit = float(kv_len) - 1.0f - float(k0);
      s0 = mask(s0, col, limit);
      s1 = mask(s1, col, limit - 16.0f);
      s2 = mask(s2, col, limit - 32.0f);
      s3 = mask(s3, col, limit - 48.0f);
    }
    qv::matrix_acc<float> m_new = qv::max(m, qv::row_max(qv::max(qv::max(s0, s1), qv::max(s2, s3))));
    qv::matrix_acc<float> alpha = qv::exp2(m - m_new);
    m = m_new;
    s0 = qv::exp2(s0 - m_new);
    s1 = qv::exp2(s1 - m_new);
    s2 = qv::exp2(s2 - m_new);
    s3 = qv::exp2(s3 - m_new);
    l = l * alpha + qv::row_sum((s0 + s1) + (s2 + s3));
    if constexpr (Lean) {
      // O tile by tile: O_j = O_j alpha + (P V)_j, the product from zero. On cooperative
      // matrices O lives as lane shares (its rescale needs them) and each step moves only the
      // new product there, not O there and back.
      qv::matrix_a<T> p0 = qv::to_matrix_a<T>(s0), p1 = qv::to_matrix_a<T>(s1), p2 = qv::to_matrix_a<T>(s2),
                      p3 = qv::to_matrix_a<T>(s3);
      o0 = o0 * alpha + pv_column<T, D, Lean>(sm, vb, p0, p1, p2, p3);
      o1 = o1 * alpha + pv_column<T, D, Lean>(sm, vb + 16, p0, p1, p2, p3);
      o2 = o2 * alpha + pv_column<T, D, Lean>(sm, vb + 32, p0, p1, p2, p3);
      o3 = o3 * alpha + pv_column<T, D, Lean>(sm, vb + 48, p0, p1, p2, p3);
      if constexpr (D == 128) {
        o4 = o4 * alpha + pv_column<T, D, Lean>(sm, vb + 64, p0, p1, p2, p3);
        o5 = o5 * alpha + pv_column<T, D, Lean>(sm, vb + 80, p0, p1, p2, p3);
        o6 = o6 * alpha + pv_column<T, D, Lean>(sm, vb + 96, p0, p1, p2, p3);
        o7 = o7 * alpha + pv_column<T, D, Lean>(sm, vb + 112, p0, p1, p2, p3);
      }
    } else {
      o0 *= alpha;
      o1 *= alpha;
      o2 *= alpha;
      o3 *= alpha;
      if constexpr (D == 128) {
        o4 *= alpha;
        o5 *= alpha;
        o6 *= alpha;
        o7 *= alpha;
      }
      accumulate_pv<T, D, Lean>(sm, vb, s0, o0, o1, o2, o3, o4, o5, o6, o7);
      accumulate_pv<T, D, Lean>(sm, vb + 16 * S::row, s1, o0, o1, o2, o3, o4, o5, o6, o7);
      accumulate_pv<T, D, Lean>(sm, vb + 32 * S::row, s2, o0, o1, o2, o3, o4, o5, o6, o7);
      accumulate_pv<T, D, Lean>(sm, vb + 48 * S::row, s3, o0, o1, o2, o3, o4, o5, o6, o7);
    }
    qv::barrier();   // every warp is done with buffer `buf` before it is refilled
  }

  // O / l into the warp's own Q rows (only it reads them), then rows below q_len out.
  qv::store_matrix(&sm[qa], S::row, o0 / l);
  qv::store_matrix(&sm[qa + 16], S::row, o1 / l);
  qv::store_matrix(&sm[qa + 32], S::row, o2 / l);
  qv::store_matrix(&sm[qa + 48], S::row, o3 / l);
  if constexpr (D == 128) {
    qv::store_matrix(&sm[qa + 64], S::row, o4 / l);
    qv::store_matrix(&sm[qa + 80], S::row, o5 / l);
    qv::store_matrix(&sm[qa + 96], S::row, o6 / l);
    qv::store_matrix(&sm[qa + 112], S::row, o7 / l);
  }
  qv::barrier();
  for (uint32_t c = t; c < kTileQ * D / 8; c += kTileThreads) {
    uint32_t i = chunk_row<D>(c), d = chunk_col<D>(c);
    if (q0 + i < q_len) qv::store(o + q_base + (q0 + i) * q_seq_stride + d, qv::load<8>(&sm[S::q + i * S::row + d]));
  }
}

}  // namespace

// PTX sm_80 images only: where an sm_90a image loads, runtime/ops takes attention_wgmma for
// every shape this kernel serves, and its ~140 KB of SASS there would only lengthen the load.
template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kTileThreads) QV_TARGETS(ptx:sm_80) void attention_tiles(
    const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads, uint32_t q_len, uint32_t kv_len,
    uint32_t q_head_stride, uint32_t q_seq_stride, uint32_t kv_head_stride, uint32_t kv_seq_stride,
    uint32_t kv_batch_stride, float scale, bool causal) {
  attention_tiles_block<T, D, false>(q, k, v, o, q_heads, kv_heads, q_len, kv_len, q_head_stride, q_seq_stride,
                                     kv_head_stride, kv_seq_stride, kv_batch_stride, scale, causal);
}

// The cooperative-matrix SPIR-V image (half tiles only there): 34 KiB of K / V / Q for D = 128,
// 2 KiB of mask indices, and the 6 KiB the lane shares add, within the 48 KiB NVIDIA's Vulkan
// driver allows.
template <typename T, uint32_t D>
QV_KERNEL QV_BLOCK(kTileThreads) QV_TARGETS(spirv:vulkan1.3_coopmat) void attention_tiles_lean(
    const T* q, const T* k, const T* v, T* o, uint32_t q_heads, uint32_t kv_heads, uint32_t q_len, uint32_t kv_len,
    uint32_t q_head_stride, uint32_t q_seq_stride, uint32_t kv_head_stride, uint32_t kv_seq_stride,
    uint32_t kv_batch_stride, float scale, bool causal) {
  attention_tiles_block<T, D, true>(q, k, v, o, q_heads, kv_heads, q_len, kv_len, q_head_stride, q_seq_stride,
                                    kv_head_stride, kv_seq_stride, kv_batch_stride, scale, causal);
}

#define QV_ATTENTION_TILES(T, D)                                                                                  \
  template void attention_tiles<T, D>(const T*, const T*, const T*, T*, uint32_t, uint32_t, uint32_t, uint32_t, \
                                      uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);
QV_ATTENTION_TILES(qv::bf16, 64)
QV_ATTENTION_TILES(qv::bf16, 128)
QV_ATTENTION_TILES(qv::half, 64)
QV_ATTENTION_TILES(qv::half, 128)

#define QV_ATTENTION_TILES_LEAN(T, D)                                                                      \
  template void attention_tiles_lean<T, D>(const T*, const T*, const T*, T*, uint32_t, uint32_t, uint32_t, \
                                           uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, float, bool);
QV_ATTENTION_TILES_LEAN(qv::half, 64)
QV_ATTENTION_TILES_LEAN(qv::half, 128)
