/* A CPU image written by hand against docs/abi.md ("CPU"), compiled by the host compiler: it lets
 * tests/package run generated wrappers through the real runtime without quiverc. Symbols and
 * parameters match cpu_manifest() in test_manifests.h. Built freestanding: no libc imports. */
#include <stdint.h>

struct qv_cpu_ctx {
  uint32_t thread_id[3];
  uint32_t block_id[3];
  uint32_t block_dim[3];
  uint32_t grid_dim[3];
  void* shared;
  void (*barrier)(struct qv_cpu_ctx*);
  void* runtime;
};

/* No kernel here uses barriers, so one call runs every thread of the block; the manifest gives
 * them 1-D blocks, so thread t of block b has global x index b * block_dim + t. */
#define FOR_EACH_THREAD_X(ctx, i)                                                       \
  for (uint32_t t_ = 0, i = (ctx)->block_id[0] * (ctx)->block_dim[0]; t_ < (ctx)->block_dim[0]; \
       ++t_, ++i)

__attribute__((visibility("default"))) void qv_k0_saxpy(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* x = *(const float* const*)args[0];
  float* y = *(float* const*)args[1];
  float a = *(const float*)args[2];
  uint32_t n = *(const uint32_t*)args[3];
  FOR_EACH_THREAD_X(ctx, i) {
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

/* bool scalars arrive as a 32-bit 0/1 (docs/abi.md). */
__attribute__((visibility("default"))) void qv_k1_select_scale(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* in = *(const float* const*)args[0];
  float* out = *(float* const*)args[1];
  uint32_t negate = *(const uint32_t*)args[2];
  float s = *(const float*)args[3];
  uint32_t n = *(const uint32_t*)args[4];
  float k = negate ? -s : s;
  FOR_EACH_THREAD_X(ctx, i) {
    if (i < n) out[i] = k * in[i];
  }
}

__attribute__((visibility("default"))) void qv_k2_fill_pattern_uint32_t(void* const* args,
                                                                         struct qv_cpu_ctx* ctx) {
  uint32_t* out = *(uint32_t* const*)args[0];
  uint32_t mul = *(const uint32_t*)args[1];
  uint32_t n = *(const uint32_t*)args[2];
  FOR_EACH_THREAD_X(ctx, i) {
    if (i < n) out[i] = i * mul + 7u;
  }
}
