// The CPU kernel ABI (docs/abi.md, "CPU"): what a kernel entry in a CPU image looks like.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

struct qv_cpu_ctx {                    // 8-byte aligned, exactly this layout
  uint32_t thread_id[3];               // read only when the kernel uses barriers
  uint32_t block_id[3];
  uint32_t block_dim[3];               // = manifest block
  uint32_t grid_dim[3];
  void* shared;                        // this block's workgroup memory, 64-byte aligned
  void (*barrier)(struct qv_cpu_ctx*); // all threads of the block meet here
  void* runtime;                       // opaque to the kernel; for barrier()
  uint32_t subgroup_size;              // lanes of a subgroup: a power of two dividing the block
  uint32_t reserved;                   // 0
};

// void <symbol>(void* const* args, struct qv_cpu_ctx* ctx);
using qv_cpu_kernel_fn = void (*)(void* const* args, qv_cpu_ctx* ctx);
}

namespace quiver::backend::cpu {
// The ABI an image is built for: quiverc's CPU images export `const uint32_t __qv_cpu_abi`
// (docs/abi.md "CPU"). This runtime runs images of versions 1 .. kCpuAbiVersion and those
// without the symbol (built before it existed, for at most version 2); a later version may read
// what this runtime does not pass, so its images are refused by name. Version 2: the 80-byte
// qv_cpu_ctx with subgroup_size (version 1 passed 72 bytes).
constexpr uint32_t kCpuAbiVersion = 2;
constexpr const char* kCpuAbiSymbol = "__qv_cpu_abi";
}  // namespace quiver::backend::cpu

static_assert(offsetof(qv_cpu_ctx, block_id) == 12);
static_assert(offsetof(qv_cpu_ctx, grid_dim) == 36);
static_assert(offsetof(qv_cpu_ctx, shared) == 48);
static_assert(offsetof(qv_cpu_ctx, barrier) == 56);
static_assert(offsetof(qv_cpu_ctx, runtime) == 64);
static_assert(offsetof(qv_cpu_ctx, subgroup_size) == 72);
static_assert(sizeof(qv_cpu_ctx) == 80 && alignof(qv_cpu_ctx) == 8);
