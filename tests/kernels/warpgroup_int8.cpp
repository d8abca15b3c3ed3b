// int8 warpgroup products (docs/matrix.md "Warpgroups", int8): a 128 x N x 128 product per block,
// two warpgroups of 64 rows each, A and B (given N x K) staged in int8 swizzled panels
// (qv::swizzle128<int8_t>: 128-element rows), four k32 products in two batches (the first closed
// by warpgroup_commit), an int32 accumulator that starts at zero (ZERO_START: PTX then does not
// read it) or at `start`, stored as int32, then converted to float, scaled per row
// (warpgroup_rows) and per column (warpgroup_cols) and stored inside an edge (rows x cols).
#include <quiver/kernel.h>

constexpr uint32_t kDepthI8 = 128;   // K: one int8 panel row (lavapipe has 32 KiB of shared memory)

template <uint32_t N, bool ZERO_START>
QV_KERNEL QV_BLOCK(256) QV_TARGETS(ptx, spirv, msl, wgsl, cpu) void warpgroup_product_i8(
    const int8_t* a, const int8_t* bt, const float* row_scale, const float* col_scale, int32_t* out, float* scaled,
    int32_t start, uint32_t rows, uint32_t cols) {
  qv::shared<int8_t, 128 * kDepthI8> as;
  qv::shared<int8_t, N * kDepthI8> bs;
  uint32_t t = qv::thread_id_x();
  uint32_t m0 = qv::block_id_x() * 128;
  for (uint32_t i = t; i < 128 * kDepthI8; i += 256)
    as[qv::swizzle128<int8_t>(i / kDepthI8, i % kDepthI8)] = a[m0 * kDepthI8 + i];
  for (uint32_t i = t; i < N * kDepthI8; i += 256) bs[qv::swizzle128<int8_t>(i / kDepthI8, i % kDepthI8)] = bt[i];
  qv::barrier();
  uint32_t r0 = 64 * (t / 128);   // this warpgroup's rows of the block's 128
  qv::warpgroup_acc<int32_t, N> acc;
  if (!ZERO_START) acc = qv::warpgroup_acc<int32_t, N>(start);
  // Written out: with ZERO_START the first product's accumulator is the constant zero (PTX: not
  // read, scale-d false), which a loop's carried value would hide.
  const int8_t* pa = &as[128 * r0];
  acc = qv::warpgroup_mma_bt(pa, &bs[0], acc);
  acc = qv::warpgroup_mma_bt(pa + 32, &bs[32], acc);
  qv::warpgroup_commit();
  acc = qv::warpgroup_mma_bt(pa + 64, &bs[64], acc);
  acc = qv::warpgroup_mma_bt(pa + 96, &bs[96], acc);
  qv::warpgroup_wait(0);
  uint32_t first = m0 + r0;   // the warpgroup's first row of the whole product
  qv::store_warpgroup(out + first * N, N, acc);
  qv::vec<uint32_t, 2> mine = qv::warpgroup_thread_rows();
  qv::vec<float, 2> rs;
  rs[0] = row_scale[first + mine[0]];
  rs[1] = row_scale[first + mine[1]];
  qv::warpgroup_acc<float, N> f =
      qv::warpgroup_to_float(acc) * qv::warpgroup_rows<N>(rs) * qv::warpgroup_cols<N>(col_scale);
  qv::store_warpgroup(scaled + first * N, N, f, rows > first ? rows - first : 0, cols);
}
template void warpgroup_product_i8<64, false>(const int8_t*, const int8_t*, const float*, const float*, int32_t*, float*,
                                              int32_t, uint32_t, uint32_t);
template void warpgroup_product_i8<112, true>(const int8_t*, const int8_t*, const float*, const float*, int32_t*, float*,
                                              int32_t, uint32_t, uint32_t);
