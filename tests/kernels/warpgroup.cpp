// The warpgroup builtins (docs/matrix.md "Warpgroups"): a 128 x N x 64 product per block, two
// warpgroups of 64 rows each, with A and B staged in swizzled panels of qv::shared memory, B as
// stored (K x N: panels of 64 columns) or transposed (N x K: panels of 64 k), the products in two
// batches (the second started while the first may still be running; the first closed by
// warpgroup_wait(1) or by warpgroup_commit), an accumulator that starts
// at a constant, element-wise arithmetic on it and stores as float and as T.
#include <quiver/kernel.h>

constexpr uint32_t kDepth = 64;   // K: one panel deep (lavapipe has 32 KiB of shared memory)

// out[128 blocks x N] = alpha * (A x B + 0.25); out16 = T(that + 1).
template <typename T, uint32_t N, bool B_TRANSPOSED>
QV_KERNEL QV_BLOCK(256) QV_TARGETS(ptx, spirv, msl, wgsl, cpu) void warpgroup_product(const T* a, const T* b, float* out,
                                                                                     T* out16, float alpha) {
  qv::shared<T, 128 * kDepth> as;   // kDepth / 64 panels of 128 rows
  qv::shared<T, N * kDepth> bs;     // B^T: kDepth / 64 panels of N rows; B: N / 64 panels of kDepth rows
  uint32_t t = qv::thread_id_x();
  uint32_t m0 = qv::block_id_x() * 128;
  for (uint32_t i = t; i < 128 * kDepth; i += 256) {
    uint32_t r = i / kDepth, c = i % kDepth;
    as[(c / 64) * (128 * 64) + qv::swizzle128(r, c % 64)] = a[(m0 + r) * kDepth + c];
  }
  for (uint32_t i = t; i < N * kDepth; i += 256) {
    if (B_TRANSPOSED) {   // b is N x K
      uint32_t n = i / kDepth, c = i % kDepth;
      bs[(c / 64) * (N * 64) + qv::swizzle128(n, c % 64)] = b[i];
    } else {   // b is K x N
      uint32_t k = i / N, n = i % N;
      bs[(n / 64) * (kDepth * 64) + qv::swizzle128(k, n % 64)] = b[i];
    }
  }
  qv::barrier();
  uint32_t rows = 64 * (t / 128);   // this warpgroup's rows of the block's 128
  qv::warpgroup_acc<float, N> acc(0.25f);
  for (uint32_t k0 = 0; k0 < kDepth; k0 += 16) {
    const T* pa = &as[(k0 / 64) * (128 * 64) + 64 * rows + k0 % 64];
    if (B_TRANSPOSED) acc = qv::warpgroup_mma_bt(pa, &bs[(k0 / 64) * (N * 64) + k0 % 64], acc);
    else acc = qv::warpgroup_mma(pa, &bs[64 * k0], kDepth * 64, acc);
    if (k0 == kDepth / 2 - 16) {   // first batch: half the depth, closed with or without a wait
      if (B_TRANSPOSED) qv::warpgroup_commit();
      else qv::warpgroup_wait(1);
    }
  }
  qv::warpgroup_wait(0);
  acc *= alpha;
  qv::store_warpgroup(out + (m0 + rows) * N, N, acc);
  qv::store_warpgroup(out16 + (m0 + rows) * N, N, acc + qv::warpgroup_acc<float, N>(1.0f));
}
template void warpgroup_product<qv::bf16, 128, false>(const qv::bf16*, const qv::bf16*, float*, qv::bf16*, float);
template void warpgroup_product<qv::bf16, 128, true>(const qv::bf16*, const qv::bf16*, float*, qv::bf16*, float);
template void warpgroup_product<qv::half, 64, false>(const qv::half*, const qv::half*, float*, qv::half*, float);
template void warpgroup_product<qv::half, 32, true>(const qv::half*, const qv::half*, float*, qv::half*, float);

// The row builtins of an online softmax (docs/matrix.md "Warpgroups"), one warpgroup per block of
// 64 rows: S = (A B^T) * scale, causally masked (column > row: -2^100 through the index
// accumulators) and keys past 47 masked too (warpgroup_mask_columns), P = exp2(S - rowmax S) stored as T in a swizzled panel, out = (T(P) V) / rowsum P.
// The rows' partial maxima and sums meet through shared memory (any subgroup size).
constexpr float kMaskScale = 1.2676506e30f;   // 2^100
QV_DEVICE float row_total(qv::shared<float, 2 * 64 * 4>& rows, uint32_t at, bool max) {
  float a = rows[at], b = rows[at + 2], c = rows[at + 4], d = rows[at + 6];
  return max ? qv::max(qv::max(a, b), qv::max(c, d)) : (a + b) + (c + d);
}
QV_DEVICE qv::vec<float, 2> combine_rows(qv::shared<float, 2 * 64 * 4>& rows, uint32_t t, qv::vec<float, 2> part,
                                         bool max) {
  // Thread t holds rows r0 = 16 (t / 32) + (t % 32) / 4 and r0 + 8, as the 4 threads t ^ {0..3} do.
  uint32_t r0 = 16 * (t / 32) + (t % 32) / 4, q = t % 4;
  qv::barrier();
  rows[(r0 * 4 + q) * 2] = part[0];
  rows[((r0 + 8) * 4 + q) * 2] = part[1];
  qv::barrier();
  qv::vec<float, 2> out;
  out[0] = row_total(rows, r0 * 4 * 2, max);
  out[1] = row_total(rows, (r0 + 8) * 4 * 2, max);
  return out;
}

template <typename T>
QV_KERNEL QV_BLOCK(128) QV_TARGETS(ptx, spirv, msl, wgsl, cpu) void warpgroup_softmax(const T* a, const T* bt, const T* v,
                                                                                     float* out, float scale) {
  qv::shared<T, 64 * 64> as;   // A, later P
  qv::shared<T, 64 * 64> bs;   // B^T (64 keys x 64 deep)
  qv::shared<T, 64 * 64> vs;   // V (64 keys x 64 columns), rows of k
  qv::shared<float, 2 * 64 * 4> rows;
  uint32_t t = qv::thread_id_x(), base = qv::block_id_x() * 64 * 64;
  for (uint32_t i = t; i < 64 * 64; i += 128) {
    as[qv::swizzle128(i / 64, i % 64)] = a[base + i];
    bs[qv::swizzle128(i / 64, i % 64)] = bt[i];
    vs[qv::swizzle128(i / 64, i % 64)] = v[i];
  }
  qv::barrier();
  qv::warpgroup_acc<float, 64> s;
  for (uint32_t k0 = 0; k0 < 64; k0 += 16) s = qv::warpgroup_mma_bt(&as[k0], &bs[k0], s);
  qv::warpgroup_wait(0);
  s *= scale;
  s = s + qv::min(qv::warpgroup_acc<float, 64>(0.0f),
                  qv::warpgroup_row_index<64>() - qv::warpgroup_col_index<64>()) * kMaskScale;
  // ... and keys past 47, through the thread's rows: row r keeps columns <= min(r, 47) in all.
  qv::vec<uint32_t, 2> mine = qv::warpgroup_thread_rows();
  qv::vec<int32_t, 2> last;
  last[0] = mine[0] < 47 ? int32_t(mine[0]) : 47;
  last[1] = mine[1] < 47 ? int32_t(mine[1]) : 47;
  s = qv::warpgroup_mask_columns(s, last, -3.0e38f);
  qv::vec<float, 2> m = combine_rows(rows, t, qv::warpgroup_row_max(s), true);
  qv::warpgroup_acc<float, 64> p = qv::exp2(s - qv::warpgroup_rows<64>(m));
  qv::vec<float, 2> l = combine_rows(rows, t, qv::warpgroup_row_sum(p), false);
  qv::store_warpgroup_swizzled(&as[0], 4096, p);   // A is no longer read: its products are done
  qv::warpgroup_barrier();
  qv::warpgroup_acc<float, 64> o;
  for (uint32_t k0 = 0; k0 < 64; k0 += 16) o = qv::warpgroup_mma(&as[k0], &vs[64 * k0], 4096, o);
  qv::warpgroup_wait(0);
  qv::store_warpgroup(out + base, 64, o / qv::warpgroup_rows<64>(l));
}
template void warpgroup_softmax<qv::bf16>(const qv::bf16*, const qv::bf16*, const qv::bf16*, float*, float);
