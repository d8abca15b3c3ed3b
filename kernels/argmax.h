// argmax's building blocks (kernels/decode.cpp's argmax and top-k, and engines' own kernels that
// split a row of logits over several blocks, tools/quiver-llm/llm_kernels.cpp).
#pragma once

#include "common.h"

namespace qvops {

// Every float as a uint32_t whose unsigned order is the order argmax ranks by: negative numbers
// (bits inverted) below positive ones (sign bit set), -0 equal to +0, and every NaN above +inf
// (0xFFFFFFFF), as torch.argmax ranks it. No real number maps to 0 (-inf is 0x007FFFFF), so 0
// marks a thread that saw no element. Integer operations only: a NaN test through a float
// comparison could be folded away, and the bits are the same on every target.
QV_DEVICE uint32_t order_key(float v) {
  uint32_t bits = qv::bit_cast<uint32_t>(v);
  uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return 0xFFFFFFFFu;   // NaN
  if (magnitude == 0u) return 0x80000000u;            // -0 ranks as +0
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}

// Element `index` into the thread's best (key, index): a strictly greater key only, so of equal
// maxima the thread keeps the first it saw; threads visit their elements in increasing order.
QV_DEVICE void argmax_take(float v, uint32_t index, uint32_t& best_key, uint32_t& best_index) {
  uint32_t key = order_key(v);
  if (key > best_key) {
    best_key = key;
    best_index = index;
  }
}
template <typename T, uint32_t C>
QV_DEVICE void argmax_take_chunk(qv::vec<T, C> v, uint32_t first, uint32_t& best_key, uint32_t& best_index) {
  argmax_take(to_f32(v[0]), first, best_key, best_index);
  argmax_take(to_f32(v[1]), first + 1, best_key, best_index);
  argmax_take(to_f32(v[2]), first + 2, best_key, best_index);
  argmax_take(to_f32(v[3]), first + 3, best_key, best_index);
  if constexpr (C == 8) {
    argmax_take(to_f32(v[4]), first + 4, best_key, best_index);
    argmax_take(to_f32(v[5]), first + 5, best_key, best_index);
    argmax_take(to_f32(v[6]), first + 6, best_key, best_index);
    argmax_take(to_f32(v[7]), first + 7, best_key, best_index);
  }
}

// A row's chunks: `chunks` 16-byte chunks from p (16-byte aligned), the first at column `col0`.
// Thread t takes chunks t, t + kRowThreads, ... A vocabulary-sized row is one block's whole work,
// so each thread issues four chunk loads before looking at any of them: with one 16-byte load in
// flight per thread a block keeps 4 KB in flight, far too little to stream a 0.5 MB row of logits
// at memory speed.
template <typename T>
QV_DEVICE void argmax_chunks(const T* p, uint32_t col0, uint32_t chunks, uint32_t& best_key, uint32_t& best_index) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  constexpr uint32_t S = kRowThreads;
  uint32_t j = qv::thread_id_x();
  for (; j + 3 * S < chunks; j += 4 * S) {
    qv::vec<T, C> v0 = qv::load<C>(p + C * j), v1 = qv::load<C>(p + C * (j + S));
    qv::vec<T, C> v2 = qv::load<C>(p + C * (j + 2 * S)), v3 = qv::load<C>(p + C * (j + 3 * S));
    argmax_take_chunk<T, C>(v0, col0 + C * j, best_key, best_index);
    argmax_take_chunk<T, C>(v1, col0 + C * (j + S), best_key, best_index);
    argmax_take_chunk<T, C>(v2, col0 + C * (j + 2 * S), best_key, best_index);
    argmax_take_chunk<T, C>(v3, col0 + C * (j + 3 * S), best_key, best_index);
  }
  for (; j < chunks; j += S) argmax_take_chunk<T, C>(qv::load<C>(p + C * j), col0 + C * j, best_key, best_index);
}

// Elements x[start .. start + n) (x's buffer starts 16-byte aligned), element i counted as index
// base + i, in three parts, so that spans of any length and start (GPT-2's rows of 50257
// columns) stream in chunks: the elements before the first 16-byte boundary one per thread, the
// whole chunks, then the elements after the last one. Each thread still sees its elements in
// increasing order (head < chunks < tail).
template <typename T>
QV_DEVICE void argmax_span(const T* x, uint32_t start, uint32_t n, uint32_t base, uint32_t& best_key,
                           uint32_t& best_index) {
  constexpr uint32_t C = qvops::chunk_elems<T>();
  uint32_t head = qv::min((C - start % C) % C, n);
  uint32_t chunks = (n - head) / C;
  uint32_t t = qv::thread_id_x();
  if (t < head) argmax_take(to_f32(x[start + t]), base + t, best_key, best_index);
  argmax_chunks(x + start + head, base + head, chunks, best_key, best_index);
  for (uint32_t i = head + C * chunks + t; i < n; i += kRowThreads)
    argmax_take(to_f32(x[start + i]), base + i, best_key, best_index);
}

// The block's largest key, then the lowest index holding it, as the largest ~index (no block
// minimum is needed; threads without that key offer 0, which is ~0xFFFFFFFF, past any column).
// Every thread of the block must call it; all get the block's key and index in place of theirs.
QV_DEVICE void block_argmax(uint32_t& key, uint32_t& index) {
  uint32_t block_key = qv::block_max(key);
  index = ~qv::block_max(key == block_key ? ~index : 0u);
  key = block_key;
}

}  // namespace qvops
