/* Hand-written CPU kernels following docs/abi.md ("CPU") exactly, standing in for quiverc's
 * CPU target output so the runtime can be tested on its own. Built as a shared object and
 * packed into a .qfb by test_fatbin.cpp. The qv_cpu_ctx layout is written out again here (not
 * included from the runtime) so a layout change on either side fails these tests. */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct qv_cpu_ctx {
  uint32_t thread_id[3];
  uint32_t block_id[3];
  uint32_t block_dim[3];
  uint32_t grid_dim[3];
  void* shared;
  void (*barrier)(struct qv_cpu_ctx*);
  void* runtime;
};
_Static_assert(offsetof(struct qv_cpu_ctx, shared) == 48, "qv_cpu_ctx layout");
_Static_assert(sizeof(struct qv_cpu_ctx) == 72, "qv_cpu_ctx layout");

/* Built a second time with QV_TEST_CPU_ABI set (quiver_test_cpu_abi_future): an image for a CPU
 * ABI later than the runtime's, which it must refuse by name. Without it the image has no
 * __qv_cpu_abi, as images built before the symbol existed. */
#ifdef QV_TEST_CPU_ABI
const uint32_t __qv_cpu_abi = QV_TEST_CPU_ABI;
#endif

#define ARG_PTR(T, i) (*(T* const*)args[i])
#define ARG_VAL(T, i) (*(const T*)args[i])

/* saxpy(const float* x, float* y, float a, uint32_t n); block 256, no barrier: one call runs
 * the whole block. */
void qv_k0_saxpy(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* x = ARG_PTR(const float, 0);
  float* y = ARG_PTR(float, 1);
  float a = ARG_VAL(float, 2);
  uint32_t n = ARG_VAL(uint32_t, 3);
  for (uint32_t t = 0; t < ctx->block_dim[0]; ++t) {
    uint32_t i = ctx->block_id[0] * ctx->block_dim[0] + t;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}

/* block_sum(const float* in, float* out, uint32_t n); block 256, shared 1024 bytes, barriers:
 * one call per thread; a tree reduction in shared memory, out[block] = sum of its slice. */
void qv_k1_block_sum(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* in = ARG_PTR(const float, 0);
  float* out = ARG_PTR(float, 1);
  uint32_t n = ARG_VAL(uint32_t, 2);
  float* tile = (float*)ctx->shared;
  uint32_t t = ctx->thread_id[0];
  uint32_t i = ctx->block_id[0] * ctx->block_dim[0] + t;
  tile[t] = i < n ? in[i] : 0.0f;
  ctx->barrier(ctx);
  for (uint32_t s = ctx->block_dim[0] / 2; s > 0; s >>= 1) {
    if (t < s) tile[t] += tile[t + s];
    ctx->barrier(ctx);
  }
  if (t == 0) out[ctx->block_id[0]] = tile[0];
}

/* tile_transpose(const int32_t* in, int32_t* out, uint32_t width); block 16x16, shared
 * 16*17*4 bytes, barriers. out (height x width transposed) = in^T, through a shared tile so a
 * thread writes an element another thread of the block loaded. height = 16 * grid_dim[1]. */
void qv_k2_tile_transpose(void* const* args, struct qv_cpu_ctx* ctx) {
  const int32_t* in = ARG_PTR(const int32_t, 0);
  int32_t* out = ARG_PTR(int32_t, 1);
  uint32_t width = ARG_VAL(uint32_t, 2);
  uint32_t height = 16 * ctx->grid_dim[1];
  int32_t (*tile)[17] = (int32_t (*)[17])ctx->shared;
  uint32_t tx = ctx->thread_id[0], ty = ctx->thread_id[1];
  uint32_t bx = ctx->block_id[0], by = ctx->block_id[1];
  tile[ty][tx] = in[(by * 16 + ty) * width + bx * 16 + tx];
  ctx->barrier(ctx);
  out[(bx * 16 + ty) * height + by * 16 + tx] = tile[tx][ty];
}

/* affine64(const double* in, double* out, double s, bool negate, int64_t offset, uint32_t n);
 * block 64, no barrier. The bool arrives as a 32-bit 0/1 (docs/abi.md); any other value is a
 * marshalling bug and poisons the output. */
void qv_k3_affine64(void* const* args, struct qv_cpu_ctx* ctx) {
  const double* in = ARG_PTR(const double, 0);
  double* out = ARG_PTR(double, 1);
  double s = ARG_VAL(double, 2);
  uint32_t negate = ARG_VAL(uint32_t, 3);
  int64_t offset = ARG_VAL(int64_t, 4);
  uint32_t n = ARG_VAL(uint32_t, 5);
  for (uint32_t t = 0; t < ctx->block_dim[0]; ++t) {
    uint32_t i = ctx->block_id[0] * ctx->block_dim[0] + t;
    if (i >= n) continue;
    if (negate > 1) {
      out[i] = -12345.0;
    } else {
      out[i] = (negate ? -in[i] : in[i]) * s + (double)offset;
    }
  }
}

/* vec4_add(const vec<float, 4>* a, vec<float, 4>* b, uint32_t count4); block 64, no barrier:
 * b[i] += a[i] for count4 four-float vectors. */
void qv_k4_vec4_add(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* a = ARG_PTR(const float, 0);
  float* b = ARG_PTR(float, 1);
  uint32_t count4 = ARG_VAL(uint32_t, 2);
  for (uint32_t t = 0; t < ctx->block_dim[0]; ++t) {
    uint32_t i = ctx->block_id[0] * ctx->block_dim[0] + t;
    if (i >= count4) continue;
    for (int c = 0; c < 4; ++c) b[4 * i + c] += a[4 * i + c];
  }
}

/* stray_barrier(float* out); its manifest entry claims no barriers, yet it calls barrier():
 * the runtime must report the inconsistency. */
void qv_k5_stray_barrier(void* const* args, struct qv_cpu_ctx* ctx) {
  float* out = ARG_PTR(float, 0);
  ctx->barrier(ctx);
  out[ctx->block_id[0]] = 1.0f;
}

/* block_ids(uint32_t* out); block 1, no barrier: out[4 * b + 0..2] = this block's id,
 * out[4 * b + 3] = grid_dim encoded as x*100 + y*10 + z, where b is the x-fastest linear block
 * index. Checks the grid decomposition. */
void qv_k7_block_ids(void* const* args, struct qv_cpu_ctx* ctx) {
  uint32_t* out = ARG_PTR(uint32_t, 0);
  uint32_t b = (ctx->block_id[2] * ctx->grid_dim[1] + ctx->block_id[1]) * ctx->grid_dim[0] + ctx->block_id[0];
  out[4 * b + 0] = ctx->block_id[0];
  out[4 * b + 1] = ctx->block_id[1];
  out[4 * b + 2] = ctx->block_id[2];
  out[4 * b + 3] = ctx->grid_dim[0] * 100 + ctx->grid_dim[1] * 10 + ctx->grid_dim[2];
}

/* alignment(const uint8_t* in, uint32_t* out); block 1, shared 100 bytes, no barrier: reports
 * the buffer's and the shared memory's address modulo 64 (the ABI promises 0 for both). */
void qv_k8_alignment(void* const* args, struct qv_cpu_ctx* ctx) {
  const uint8_t* in = ARG_PTR(const uint8_t, 0);
  uint32_t* out = ARG_PTR(uint32_t, 1);
  out[0] = (uint32_t)((uintptr_t)in % 64);
  out[1] = (uint32_t)((uintptr_t)ctx->shared % 64);
  out[2] = ctx->shared != NULL;
  ((volatile uint8_t*)ctx->shared)[99] = in[0];   /* the whole declared size is usable */
}

/* handshake(uint32_t* flags, uint32_t me, uint32_t other, uint32_t timeout_ms); block 1, no
 * barrier. Raises flags[me], then waits for flags[other] for at most timeout_ms and records in
 * flags[2 + me] whether it came (1) or not (2). Launched on two devices over the same memory,
 * both see each other only if the two launches run at the same time. */
void qv_k9_handshake(void* const* args, struct qv_cpu_ctx* ctx) {
  uint32_t* flags = ARG_PTR(uint32_t, 0);
  uint32_t me = ARG_VAL(uint32_t, 1);
  uint32_t other = ARG_VAL(uint32_t, 2);
  uint32_t timeout_ms = ARG_VAL(uint32_t, 3);
  (void)ctx;
  __atomic_store_n(&flags[me], 1u, __ATOMIC_SEQ_CST);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (__atomic_load_n(&flags[other], __ATOMIC_SEQ_CST) != 0) {
      __atomic_store_n(&flags[2 + me], 1u, __ATOMIC_SEQ_CST);
      return;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (ms > (int64_t)timeout_ms) {
      __atomic_store_n(&flags[2 + me], 2u, __ATOMIC_SEQ_CST);
      return;
    }
  }
}

/* block_sum_loops(const float* in, float* out, uint32_t* calls, uint32_t n); block 256, shared
 * 1024 bytes, barriers, compiled as loops over the threads: only the block entry
 * (`__qv_block_` + symbol) exists, and one call runs the whole block, as quiverc's CPU target
 * emits a barrier kernel whose barriers it turned into loops. calls[block] counts the calls, so
 * a runtime that ran it once per thread (fibers) is seen. */
void __qv_block_qv_k10_block_sum_loops(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* in = ARG_PTR(const float, 0);
  float* out = ARG_PTR(float, 1);
  uint32_t* calls = ARG_PTR(uint32_t, 2);
  uint32_t n = ARG_VAL(uint32_t, 3);
  float* tile = (float*)ctx->shared;
  const uint32_t threads = ctx->block_dim[0];
  for (uint32_t t = 0; t < threads; ++t) {
    uint32_t i = ctx->block_id[0] * threads + t;
    tile[t] = i < n ? in[i] : 0.0f;
  }
  for (uint32_t s = threads / 2; s > 0; s >>= 1)
    for (uint32_t t = 0; t < s; ++t) tile[t] += tile[t + s];
  out[ctx->block_id[0]] = tile[0];
  calls[ctx->block_id[0]] += 1;
}
