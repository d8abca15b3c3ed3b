// The copy kernel whose bandwidth is the reference for every memory-bound op (one 16-byte load
// and one 16-byte store per element group, the widest access each target has).
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(256) void copy_f32x4(const float* in, float* out, uint32_t n4) {
  for (uint32_t i = qv::global_id_x(); i < n4; i += qv::grid_dim_x() * 256u)
    qv::store(out + 4 * i, qv::load<4>(in + 4 * i));
}

// Writes `n4` groups of four floats: the L2 flush between the compute-bound cases' runs (as
// triton.testing.do_bench, which timed the anchors, zeroes 256 MB before each run).
QV_KERNEL QV_BLOCK(256) void fill_f32x4(float* out, float value, uint32_t n4) {
  for (uint32_t i = qv::global_id_x(); i < n4; i += qv::grid_dim_x() * 256u) qv::store(out + 4 * i, qv::float4(value));
}
