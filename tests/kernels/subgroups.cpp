// Subgroup operations and the block-wide reductions built on them. Written to be correct for
// any subgroup size: each thread also records the subgroup size, so the host can check it.
#include <quiver/kernel.h>

QV_KERNEL QV_BLOCK(128) void subgroup_ops(const float* x, const int32_t* v, float* fsum, float* fmax,
                                          int32_t* imin, uint32_t* umax, float* rotated, float* xored,
                                          float* first, uint32_t* sizes) {
  uint32_t i = qv::global_id_x();
  uint32_t lane = qv::subgroup_lane();
  uint32_t size = qv::subgroup_size();
  float xv = x[i];
  fsum[i] = qv::subgroup_sum(xv);
  fmax[i] = qv::subgroup_max(xv);
  imin[i] = qv::subgroup_min(v[i]);
  umax[i] = qv::subgroup_max(static_cast<uint32_t>(v[i]));
  rotated[i] = qv::subgroup_shuffle(xv, (lane + 1) % size);
  xored[i] = qv::subgroup_shuffle_xor(xv, 1u % size);
  first[i] = qv::subgroup_broadcast(xv, 0);
  sizes[i] = size;
}

// Block sums and maxima of a 2-D block (8 x 32 = 256 threads), used twice in a row.
QV_KERNEL QV_BLOCK(8, 32) void block_reductions(const float* x, const int32_t* v, float* sums, float* maxes,
                                                int32_t* isums) {
  uint32_t t = qv::thread_id_x() + 8 * qv::thread_id_y();
  uint32_t i = qv::block_id_x() * 256 + t;
  float s = qv::block_sum(x[i]);
  float m = qv::block_max(x[i]);
  int32_t is = qv::block_sum(v[i]);
  if (t == 17) {   // any thread has the result
    sums[qv::block_id_x()] = s;
    maxes[qv::block_id_x()] = m;
    isums[qv::block_id_x()] = is;
  }
}

// The same over blocks whose last subgroup is partly filled (at 32 lanes a subgroup, 48 threads
// are 32 + 16 lanes and 1000 are 31 subgroups + 8 lanes): the subgroups' partial results are
// combined by one subgroup operation only where every subgroup has a lane for each of them.
#define QV_RAGGED_BLOCK_REDUCTIONS(name, T, targets)                                                          \
  QV_KERNEL QV_BLOCK(T) targets void name(const float* x, const int32_t* v, float* sums, float* maxes,        \
                                          int32_t* isums) {                                                    \
    uint32_t t = qv::thread_id_x(), i = qv::block_id_x() * T + t;                                            \
    float s = qv::block_sum(x[i]);                                                                            \
    float m = qv::block_max(x[i]);                                                                            \
    int32_t is = qv::block_sum(v[i]);                                                                         \
    if (t == T - 1) {                                                                                         \
      sums[qv::block_id_x()] = s;                                                                             \
      maxes[qv::block_id_x()] = m;                                                                            \
      isums[qv::block_id_x()] = is;                                                                           \
    }                                                                                                         \
  }
QV_RAGGED_BLOCK_REDUCTIONS(block_reductions_48, 48, )
QV_RAGGED_BLOCK_REDUCTIONS(block_reductions_1000, 1000, QV_TARGETS(ptx, hsaco, spirv, msl, cpu))
#undef QV_RAGGED_BLOCK_REDUCTIONS
