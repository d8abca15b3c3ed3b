// 2-D tiled transpose through shared memory (padded rows avoid bank conflicts).
#include <quiver/kernel.h>

template <typename T, uint32_t TILE>
QV_KERNEL QV_BLOCK(TILE, TILE) void transpose(const T* in, T* out, uint32_t rows, uint32_t cols) {
  qv::shared<T, TILE*(TILE + 1)> tile;
  uint32_t tx = qv::thread_id_x(), ty = qv::thread_id_y();
  uint32_t x = qv::block_id_x() * TILE + tx;   // column in `in`
  uint32_t y = qv::block_id_y() * TILE + ty;   // row in `in`
  if (x < cols && y < rows) tile[ty * (TILE + 1) + tx] = in[y * cols + x];
  qv::barrier();
  uint32_t ox = qv::block_id_y() * TILE + tx;  // column in `out` (= row in `in`)
  uint32_t oy = qv::block_id_x() * TILE + ty;  // row in `out`
  if (ox < rows && oy < cols) out[oy * rows + ox] = tile[tx * (TILE + 1) + ty];
}

template void transpose<float, 16>(const float*, float*, uint32_t, uint32_t);
template void transpose<int32_t, 16>(const int32_t*, int32_t*, uint32_t, uint32_t);
