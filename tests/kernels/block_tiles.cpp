// The block-tile builtins (docs/matrix.md "Block tiles"): C = alpha * (A B + 0.25) over a whole
// matrix, one BM x BN tile per block, K in steps of KS read straight from the buffers (B as
// stored, K x N, or transposed, N x K), stored as float and as T (+ 1); and the same product with
// A staged through qv::shared memory first.
#include <quiver/kernel.h>

template <typename T, uint32_t BM, uint32_t BN, uint32_t KS, bool BT>
QV_KERNEL QV_BLOCK(64) void block_product(const T* a, const T* b, float* out, T* out16, uint32_t n, uint32_t k,
                                          float alpha) {
  uint32_t row0 = qv::block_id_y() * BM, col0 = qv::block_id_x() * BN;
  qv::block_acc<float, BM, BN> acc(0.25f);
  for (uint32_t k0 = 0; k0 < k; k0 += KS) {
    if (BT) acc = qv::block_mma_bt<KS>(a + row0 * k + k0, k, b + col0 * k + k0, k, acc);
    else acc = qv::block_mma<KS>(a + row0 * k + k0, k, b + k0 * n + col0, n, acc);
  }
  acc *= alpha;
  qv::store_block(out + row0 * n + col0, n, acc);
  qv::store_block(out16 + row0 * n + col0, n, acc + qv::block_acc<float, BM, BN>(1.0f));
}
template void block_product<qv::half, 32, 64, 16, false>(const qv::half*, const qv::half*, float*, qv::half*, uint32_t,
                                                         uint32_t, float);
template void block_product<qv::half, 64, 32, 32, true>(const qv::half*, const qv::half*, float*, qv::half*, uint32_t,
                                                        uint32_t, float);
template void block_product<qv::bf16, 32, 32, 16, true>(const qv::bf16*, const qv::bf16*, float*, qv::bf16*, uint32_t,
                                                        uint32_t, float);

// A (32 x 16 per step) through a qv::shared array, B from the buffer: the block's writes made
// visible by barrier() before the product reads them, and a barrier before they are overwritten.
QV_KERNEL QV_BLOCK(128) void block_product_shared(const qv::half* a, const qv::half* b, float* out, qv::half* out16,
                                                  uint32_t n, uint32_t k, float alpha) {
  qv::shared<qv::half, 32 * 16> as;
  uint32_t row0 = qv::block_id_y() * 32, col0 = qv::block_id_x() * 32, t = qv::thread_id_x();
  qv::block_acc<float, 32, 32> acc(0.25f);
  for (uint32_t k0 = 0; k0 < k; k0 += 16) {
    for (uint32_t i = t; i < 32 * 16; i += 128) as[i] = a[(row0 + i / 16) * k + k0 + i % 16];
    qv::barrier();
    acc = qv::block_mma<16>(&as[0], 16, b + k0 * n + col0, n, acc);
    qv::barrier();
  }
  acc = acc * alpha;
  qv::store_block(out + row0 * n + col0, n, acc);
  qv::store_block(out16 + row0 * n + col0, n, acc + qv::block_acc<float, 32, 32>(1.0f));
}

// int8 block products: S = A B^T + 7 in int32 (wrapping), stored as int32; K 64 a step.
template <uint32_t BM, uint32_t BN>
QV_KERNEL QV_BLOCK(64) void block_product_i8(const int8_t* a, const int8_t* bt, int32_t* out, uint32_t n, uint32_t k) {
  uint32_t row0 = qv::block_id_y() * BM, col0 = qv::block_id_x() * BN;
  qv::block_acc<int32_t, BM, BN> acc(7);
  for (uint32_t k0 = 0; k0 < k; k0 += 64) acc = qv::block_mma_bt<64>(a + row0 * k + k0, k, bt + col0 * k + k0, k, acc);
  qv::store_block(out + row0 * n + col0, n, acc);
}
template void block_product_i8<32, 64>(const int8_t*, const int8_t*, int32_t*, uint32_t, uint32_t);

// The accumulator starts from memory (load_block of C0) and goes through a qv::shared array and
// back (store_block, alpha applied there by the threads element by element, load_block): the
// round trip a kernel takes to scale an accumulator's rows.
QV_KERNEL QV_BLOCK(128) void block_product_loaded(const qv::half* a, const qv::half* b, const float* c0, float* out,
                                                  qv::half* out16, uint32_t n, uint32_t k, float alpha) {
  constexpr uint32_t kStride = 48;   // rows of the shared copy padded past the tile's 32 columns
  qv::shared<float, 32 * kStride> stage;
  uint32_t row0 = qv::block_id_y() * 32, col0 = qv::block_id_x() * 32, t = qv::thread_id_x();
  qv::block_acc<float, 32, 32> acc = qv::load_block<32, 32>(c0 + row0 * n + col0, n);
  for (uint32_t k0 = 0; k0 < k; k0 += 16) acc = qv::block_mma<16>(a + row0 * k + k0, k, b + k0 * n + col0, n, acc);
  qv::store_block(&stage[0], kStride, acc);
  qv::barrier();
  for (uint32_t i = t; i < 32 * 32; i += 128) stage[(i / 32) * kStride + i % 32] *= alpha;
  qv::barrier();
  acc = qv::load_block<32, 32>(&stage[0], kStride);
  qv::store_block(out + row0 * n + col0, n, acc);
  qv::store_block(out16 + row0 * n + col0, n, acc + qv::block_acc<float, 32, 32>(1.0f));
}

// int8: S = C0 + A B^T in int32 (wrapping), C0 read with load_block.
QV_KERNEL QV_BLOCK(64) void block_product_i8_loaded(const int8_t* a, const int8_t* bt, const int32_t* c0, int32_t* out,
                                                    uint32_t n, uint32_t k) {
  uint32_t row0 = qv::block_id_y() * 32, col0 = qv::block_id_x() * 64;
  qv::block_acc<int32_t, 32, 64> acc = qv::load_block<32, 64>(c0 + row0 * n + col0, n);
  for (uint32_t k0 = 0; k0 < k; k0 += 64) acc = qv::block_mma_bt<64>(a + row0 * k + k0, k, bt + col0 * k + k0, k, acc);
  qv::store_block(out + row0 * n + col0, n, acc);
}
