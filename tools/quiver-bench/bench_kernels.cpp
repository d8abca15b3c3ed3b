// The copy kernel whose bandwidth is the reference for every memory-bound op (one 16-byte load
// and one 16-byte store per element group, the widest access each target has).
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(256) void copy_f32x4(const float* in, float* out, uint32_t n4) {
  for (uint32_t i = qv::global_id_x(); i < n4; i += qv::grid_dim_x() * 256u)
    qv::store(out + 4 * i, qv::load<4>(in + 4 * i));
}
