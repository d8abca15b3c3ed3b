/* A real CPU image for the quiver-dump tests: saxpy with the CPU kernel ABI (docs/abi.md),
 * built as a shared object so llvm-objdump has a genuine ELF to disassemble. */
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

void qv_k0_saxpy(void* const* args, struct qv_cpu_ctx* ctx) {
  const float* x = *(const float* const*)args[0];
  float* y = *(float* const*)args[1];
  float a = *(const float*)args[2];
  uint32_t n = *(const uint32_t*)args[3];
  for (uint32_t t = 0; t < ctx->block_dim[0]; ++t) {
    uint32_t i = ctx->block_id[0] * ctx->block_dim[0] + t;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
