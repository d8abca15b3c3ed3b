// Private to the CPU target: the exported entry of each kernel (docs/abi.md "CPU") built with
// LLVM's IRBuilder around the kernel's per-thread function, and the link into a .so.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "llvm/IR/Module.h"
#include "targets/llvm_common/llvm_common.h"
#include "targets/target.h"

namespace quiver::compiler::cpu {

// The per-thread function's parameters, in order: for each kernel parameter a memref
// descriptor (5 LLVM arguments: allocated, aligned, offset, size, stride) or the scalar; then
// the shared-memory descriptor; the ctx pointer; thread_id xyz; block_id xyz; grid_dim xyz;
// the subgroup size (index = i64 or i32 by the data layout). block_dim is a constant folded
// into the body.
struct ThreadFunction {
  std::string symbol;                 // the exported entry
  std::string thread_name;            // the per-thread function inside the module
  std::vector<bool> param_is_buffer;  // kernel parameters in order
  std::array<uint32_t, 3> block{};
  uint32_t shared_bytes = 0;
  bool uses_barrier = false;          // the manifest's uses_barrier
  bool block_loops = false;           // one call runs the block (barrier_fission.h)
  // One fiber per thread (ctx->barrier switches): a barrier kernel not turned into loops.
  bool fibers() const { return uses_barrier && !block_loops; }
};

// The exported name of a kernel whose entry runs the whole block in one call although its
// manifest says uses_barrier (docs/abi.md "CPU").
inline std::string block_entry_name(const std::string& symbol) { return "__qv_block_" + symbol; }

constexpr unsigned kCtxIds = 10;   // thread_id, block_id, grid_dim (3 each), subgroup_size

// Adds `symbol(void* const* args, qv_cpu_ctx* ctx)` calling the thread function once
// (fiber kernels: thread_id from ctx; block-loop kernels, exported as block_entry_name(symbol):
// thread ids unused) or for every thread of the block (x fastest).
void add_entry(llvm::Module& module, const ThreadFunction& fn, const llvm_common::ErrorContext& where);
// Exports `const uint32_t __qv_cpu_abi`, the CPU ABI version the image is built for (docs/abi.md
// "CPU"): a runtime that predates the version refuses the image by name instead of passing it
// a context it does not know.
void add_abi_version(llvm::Module& module);

// Rewrites each floating-point atomicrmw (qv::atomic_add of float, ...) into a loop of
// integer cmpxchg on its bits, which LLVM's own expansion then lowers like any other cmpxchg.
// LLVM 19 expands the float atomicrmw itself into a cmpxchg that, on aarch64 without LSE (the
// generic baseline), becomes a load/store-exclusive loop whose store status is the zero
// register: a failed store-exclusive counted as success, and the update lost.
void expand_float_atomics(llvm::Module& module);

// Throws TargetError listing undefined symbols of `object` other than libm's.
void check_undefined_symbols(const std::string& object, const llvm_common::ErrorContext& where);

// Links `object` into an ELF shared object with ld.lld.
std::vector<std::byte> link_shared_object(const std::string& object, const std::string& arch,
                                          const llvm_common::ErrorContext& where,
                                          const TargetOptions& options);

}  // namespace quiver::compiler::cpu
