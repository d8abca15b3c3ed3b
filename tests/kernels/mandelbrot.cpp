// Escape-time iteration count per pixel, through a QV_DEVICE helper with an early return.
#include <quiver/kernel.h>

QV_DEVICE uint32_t escape_time(float cr, float ci, uint32_t max_iter) {
  float zr = 0.0f, zi = 0.0f;
  for (uint32_t k = 0; k < max_iter; ++k) {
    float zr2 = zr * zr, zi2 = zi * zi;
    if (zr2 + zi2 > 4.0f) return k;
    zi = 2.0f * zr * zi + ci;
    zr = zr2 - zi2 + cr;
  }
  return max_iter;
}

QV_KERNEL QV_BLOCK(16, 16) void mandelbrot(uint32_t* iters, uint32_t width, uint32_t height, float x0, float y0,
                                           float step, uint32_t max_iter) {
  uint32_t px = qv::global_id_x(), py = qv::global_id_y();
  if (px >= width || py >= height) return;
  iters[py * width + px] = escape_time(x0 + step * static_cast<float>(px), y0 + step * static_cast<float>(py), max_iter);
}
