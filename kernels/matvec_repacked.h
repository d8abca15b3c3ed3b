// The repacked q4_0 / q8_0 layout (ops::repack_q4_0 / repack_q8_0) and its products' walk on
// int8 activations, shared by the op library's kernels (matvec.cpp) and the kernels of programs
// that fuse their own work into a product (tools/quiver-llm: the decode step's Q, K and V
// product followed by their rotation and cache append in the same launch).
#pragma once

#include "common.h"

namespace qvops {

constexpr uint32_t kQBlock = 32;   // elements per quantization block

// ---- Repacked q4_0 / q8_0 ---------------------------------------------------------------------
// The same blocks, reordered once by ops::repack_q4_0 / repack_q8_0 (runtime/ops/repack.cpp) so
// that each of a lane's weight loads is 16 bytes and a subgroup's are contiguous: the GGUF order's
// 18- and 34-byte blocks allow only 16-bit loads, which hold 2 bytes of a 32-bit register each
// and left matvec_q4_0 latency-bound at 0.45 of copy on the H100 (docs/perf/NOTES.md). Layout
// (cols a multiple of 1024): the quants of every row, row after row, then every block's f16
// scale, row after row. A row is chunks of 32 blocks; in chunk c, layout lane l = 4 (b % 8) + p
// (l < 32) holds at words WB l .. WB l + WB - 1 quarter p of blocks b = 32 c + l / 4 + 8 i,
// i = 0 .. 3 in turn (4 bytes of a q4_0 block, 8 of a q8_0 block: WB = 4 or 8 words); the
// chunk's scales sit at 4 (b % 8) + i. So a lane's quants for four blocks are one 16-byte load
// (two for q8_0), the loads of a 32-lane subgroup cover 512 contiguous bytes, and the x values of
// a load's lanes are those of matvec_q4_0's groups (4 lanes a block, consecutive floats).
constexpr uint32_t kChunkBlocks = 32;
constexpr uint32_t kChunkLanes = 32;   // lanes of the layout: any subgroup size reads it

// Chunk c of a row for one layout lane, whose chunk-0 quant words are at q[o] and scales at
// s[so]. (32-bit offsets from the kernel's pointers: 64-bit pointers per row cost 15 registers.)
template <bool Q8>
QV_DEVICE void load_chunk(const uint32_t* q, uint32_t o, const qv::half* s, uint32_t so, uint32_t c,
                          qv::vec<uint32_t, 4>& v, qv::vec<uint32_t, 4>& w, qv::vec<qv::half, 4>& sc) {
  constexpr uint32_t WB = Q8 ? 8 : 4;
  v = qv::load<4>(q + (o + c * kChunkBlocks * WB));
  if constexpr (Q8) w = qv::load<4>(q + (o + c * kChunkBlocks * WB + 4));
  else w = v;
  sc = qv::load<4>(s + (so + c * kChunkBlocks));
}

// The repacked kernels' block i of a chunk (repacked_block) on int8 activations: the lane's quants
// of block b = 32 c + l / 4 + 8 i, quarter p, times the activations' quants at the same
// elements, summed exactly by qv::dot4_i8 (dp4a / OpSDot), then scaled once by d_w d_x.
template <bool Q8, uint32_t I>
QV_DEVICE void repacked_block_a8(qv::vec<uint32_t, 4> v0, qv::vec<uint32_t, 4> w0, qv::vec<qv::half, 4> s0,
                                 qv::vec<uint32_t, 4> v1, qv::vec<uint32_t, 4> w1, qv::vec<qv::half, 4> s1,
                                 const uint32_t* xq, const float* xd, uint32_t b, uint32_t p, float& a0, float& a1) {
  uint32_t bi = b + 8 * I;   // the block's index in the row
  float dx = xd[bi];
  int32_t q0, q1;
  if constexpr (Q8) {
    qv::vec<uint32_t, 2> xw = qv::load<2>(xq + (8 * bi + 2 * p));   // elements 8 p .. 8 p + 7
    constexpr uint32_t k = (2 * I) % 4;
    uint32_t a00 = I < 2 ? v0[k] : w0[k], a01 = I < 2 ? v0[k + 1] : w0[k + 1];
    uint32_t a10 = I < 2 ? v1[k] : w1[k], a11 = I < 2 ? v1[k + 1] : w1[k + 1];
    q0 = qv::dot4_i8(a01, xw[1], qv::dot4_i8(a00, xw[0], 0));
    q1 = qv::dot4_i8(a11, xw[1], qv::dot4_i8(a10, xw[0], 0));
  } else {
    // The nibbles (stored q ^ 8) at the top of their bytes are the signed bytes 16 (q - 8): q0 and
    // q1 are 16 times the blocks' sums, which matvec_repacked_a8 takes back once a row.
    uint32_t xlo = xq[8 * bi + p], xhi = xq[8 * bi + 4 + p];   // elements 4 p .., 16 + 4 p ..
    uint32_t u0 = v0[I], u1 = v1[I];
    q0 = qv::dot4_i8(u0 & 0xF0F0F0F0u, xhi, qv::dot4_i8((u0 << 4) & 0xF0F0F0F0u, xlo, 0));
    q1 = qv::dot4_i8(u1 & 0xF0F0F0F0u, xhi, qv::dot4_i8((u1 << 4) & 0xF0F0F0F0u, xlo, 0));
  }
  a0 = qv::fma(static_cast<float>(s0[I]) * dx, static_cast<float>(q0), a0);
  a1 = qv::fma(static_cast<float>(s1[I]) * dx, static_cast<float>(q1), a1);
}

template <bool Q8>
QV_DEVICE void repacked_chunk_a8(qv::vec<uint32_t, 4> v0, qv::vec<uint32_t, 4> w0, qv::vec<qv::half, 4> s0,
                                 qv::vec<uint32_t, 4> v1, qv::vec<uint32_t, 4> w1, qv::vec<qv::half, 4> s1,
                                 const uint32_t* xq, const float* xd, uint32_t b, uint32_t p, float& a0, float& a1) {
  repacked_block_a8<Q8, 0>(v0, w0, s0, v1, w1, s1, xq, xd, b, p, a0, a1);
  repacked_block_a8<Q8, 1>(v0, w0, s0, v1, w1, s1, xq, xd, b, p, a0, a1);
  repacked_block_a8<Q8, 2>(v0, w0, s0, v1, w1, s1, xq, xd, b, p, a0, a1);
  repacked_block_a8<Q8, 3>(v0, w0, s0, v1, w1, s1, xq, xd, b, p, a0, a1);
}

// K chunks (1, 2 or 4) of both rows, every load issued before any arithmetic (as repacked_chunks);
// b: the lane's first block of chunk 0 (l / 4).
template <bool Q8, uint32_t K>
QV_DEVICE void repacked_chunks_a8(const uint32_t* q, uint32_t o0, uint32_t o1, const qv::half* s, uint32_t so0,
                                  uint32_t so1, const uint32_t* xq, const float* xd, uint32_t b, uint32_t c,
                                  uint32_t p, float& a0, float& a1) {
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
  repacked_chunk_a8<Q8>(v0, w0, t0, v1, w1, t1, xq, xd, b + c * kChunkBlocks, p, a0, a1);
  if constexpr (K >= 2) repacked_chunk_a8<Q8>(v2, w2, t2, v3, w3, t3, xq, xd, b + (c + 1) * kChunkBlocks, p, a0, a1);
  if constexpr (K == 4) {
    repacked_chunk_a8<Q8>(v4, w4, t4, v5, w5, t5, xq, xd, b + (c + 2) * kChunkBlocks, p, a0, a1);
    repacked_chunk_a8<Q8>(v6, w6, t6, v7, w7, t7, xq, xd, b + (c + 3) * kChunkBlocks, p, a0, a1);
  }
}

// matvec_repacked's walk over rows and chunks, on int8 activations (xq, xd as
// quantize_activations_q8 writes them): K chunks a step (the kernels below say which), the x side
// of a block now 8 bytes and a scale instead of 32 floats; P row pairs a block, a pair's chunks
// split among the block's spare subgroups (qvops::split_row).
template <bool Q8, uint32_t K, uint32_t P>
QV_DEVICE void matvec_repacked_a8(const uint32_t* q, const qv::half* scales, const uint32_t* xq, const float* xd,
                                  float* y, uint32_t rows, uint32_t cols) {
  constexpr uint32_t WB = Q8 ? 8 : 4;
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t blocks = cols / kQBlock, chunks = blocks / kChunkBlocks, first, end;
  qvops::split_range<P>(chunks, sg, first, end);
  const qv::half* row_scales = scales + 2 * rows * blocks * WB;
  const float* xs = xd + cols / 4;   // the activations' scales follow their quants
  for (uint32_t step = 0; step < qvops::split_steps<P>(sg); ++step) {
    bool valid0, valid1;
    uint32_t row1, row0 = qvops::split_row<P>(step, sg, rows, valid0, valid1, row1);
    float a0 = 0.0f, a1 = 0.0f;
    if (valid0) {
      for (uint32_t l = lane; l < kChunkLanes; l += sg) {
        uint32_t o0 = row0 * blocks * WB + WB * l, o1 = row1 * blocks * WB + WB * l;
        uint32_t so0 = row0 * blocks + 4 * (l / 4), so1 = row1 * blocks + 4 * (l / 4);
        uint32_t c = first;
        for (; c + K <= end; c += K)
          repacked_chunks_a8<Q8, K>(q, o0, o1, row_scales, so0, so1, xq, xs, l / 4, c, l % 4, a0, a1);
        for (; c < end; ++c)
          repacked_chunks_a8<Q8, 1>(q, o0, o1, row_scales, so0, so1, xq, xs, l / 4, c, l % 4, a0, a1);
      }
    }
    // q4_0's sums are 16 times the row's (repacked_block_a8): scaling by a power of two is exact,
    // so the result is what the sums of q - 8 would give.
    if constexpr (!Q8) {
      a0 *= 0.0625f;
      a1 *= 0.0625f;
    }
    qvops::split_store<P>(y, row0, valid0, valid1, a0, a1, sg, rows, step);
  }
}

// ---- Four rows a subgroup (q4_0r: the `_rows4` kernel, qvops::quad_row) -----------------------
// Block I of chunk c for four rows: the activations' side (two quant words and the scale, as in
// repacked_block_a8) loaded once for the four rows.
QV_DEVICE int32_t q4_word_dot_a8(uint32_t u, uint32_t xlo, uint32_t xhi) {
  return qv::dot4_i8(u & 0xF0F0F0F0u, xhi, qv::dot4_i8((u << 4) & 0xF0F0F0F0u, xlo, 0));
}
template <uint32_t I>
QV_DEVICE void q4_block_a8_rows4(qv::vec<uint32_t, 4> v0, qv::vec<qv::half, 4> s0, qv::vec<uint32_t, 4> v1,
                                 qv::vec<qv::half, 4> s1, qv::vec<uint32_t, 4> v2, qv::vec<qv::half, 4> s2,
                                 qv::vec<uint32_t, 4> v3, qv::vec<qv::half, 4> s3, const uint32_t* xq,
                                 const float* xd, uint32_t b, uint32_t p, float& a0, float& a1, float& a2, float& a3) {
  uint32_t bi = b + 8 * I;
  float dx = xd[bi];
  uint32_t xlo = xq[8 * bi + p], xhi = xq[8 * bi + 4 + p];
  a0 = qv::fma(static_cast<float>(s0[I]) * dx, static_cast<float>(q4_word_dot_a8(v0[I], xlo, xhi)), a0);
  a1 = qv::fma(static_cast<float>(s1[I]) * dx, static_cast<float>(q4_word_dot_a8(v1[I], xlo, xhi)), a1);
  a2 = qv::fma(static_cast<float>(s2[I]) * dx, static_cast<float>(q4_word_dot_a8(v2[I], xlo, xhi)), a2);
  a3 = qv::fma(static_cast<float>(s3[I]) * dx, static_cast<float>(q4_word_dot_a8(v3[I], xlo, xhi)), a3);
}
// Chunk c of four rows (their lane's words from o0 .. o3, scales from so0 .. so3): the four rows'
// loads (as many bytes as the pair walk's two chunks of two rows) before their arithmetic.
QV_DEVICE void q4_chunk_a8_rows4(const uint32_t* q, uint32_t o0, uint32_t o1, uint32_t o2, uint32_t o3,
                                 const qv::half* s, uint32_t so0, uint32_t so1, uint32_t so2, uint32_t so3,
                                 const uint32_t* xq, const float* xd, uint32_t b, uint32_t c, uint32_t p, float& a0,
                                 float& a1, float& a2, float& a3) {
  qv::vec<uint32_t, 4> v0, v1, v2, v3, unused;
  qv::vec<qv::half, 4> t0, t1, t2, t3;
  load_chunk<false>(q, o0, s, so0, c, v0, unused, t0);
  load_chunk<false>(q, o1, s, so1, c, v1, unused, t1);
  load_chunk<false>(q, o2, s, so2, c, v2, unused, t2);
  load_chunk<false>(q, o3, s, so3, c, v3, unused, t3);
  uint32_t bc = b + c * kChunkBlocks;
  q4_block_a8_rows4<0>(v0, t0, v1, t1, v2, t2, v3, t3, xq, xd, bc, p, a0, a1, a2, a3);
  q4_block_a8_rows4<1>(v0, t0, v1, t1, v2, t2, v3, t3, xq, xd, bc, p, a0, a1, a2, a3);
  q4_block_a8_rows4<2>(v0, t0, v1, t1, v2, t2, v3, t3, xq, xd, bc, p, a0, a1, a2, a3);
  q4_block_a8_rows4<3>(v0, t0, v1, t1, v2, t2, v3, t3, xq, xd, bc, p, a0, a1, a2, a3);
}
// matvec_q4_0r_a8_rows4's walk: blocks of kQuadRows rows, a subgroup's four rows one chunk a step.
QV_DEVICE void matvec_q4_0r_a8_quads(const uint32_t* q, const qv::half* scales, const uint32_t* xq, const float* xd,
                                     float* y, uint32_t rows, uint32_t cols) {
  constexpr uint32_t WB = 4;
  uint32_t sg = qv::subgroup_size(), lane = qv::subgroup_lane();
  uint32_t blocks = cols / kQBlock, chunks = blocks / kChunkBlocks;
  const qv::half* row_scales = scales + 2 * rows * blocks * WB;
  const float* xs = xd + cols / 4;   // the activations' scales follow their quants
  for (uint32_t step = 0; step < quad_steps(sg); ++step) {
    bool valid;
    uint32_t r1, r2, r3, r0 = quad_row(step, sg, rows, valid, r1, r2, r3);
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    if (valid) {
      for (uint32_t l = lane; l < kChunkLanes; l += sg) {
        uint32_t o0 = r0 * blocks * WB + WB * l, o1 = r1 * blocks * WB + WB * l;
        uint32_t o2 = r2 * blocks * WB + WB * l, o3 = r3 * blocks * WB + WB * l;
        uint32_t sb = 4 * (l / 4);
        uint32_t so0 = r0 * blocks + sb, so1 = r1 * blocks + sb, so2 = r2 * blocks + sb, so3 = r3 * blocks + sb;
        for (uint32_t c = 0; c < chunks; ++c)
          q4_chunk_a8_rows4(q, o0, o1, o2, o3, row_scales, so0, so1, so2, so3, xq, xs, l / 4, c, l % 4, a0, a1, a2,
                            a3);
      }
    }
    // As matvec_repacked_a8: the sums are 16 times the rows' (exact).
    store_quad(y, r0, valid, rows, a0 * 0.0625f, a1 * 0.0625f, a2 * 0.0625f, a3 * 0.0625f);
  }
}

}  // namespace qvops
