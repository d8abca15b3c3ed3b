// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): no CUDA toolkit header
// or library is needed to build quiver. The few types and enum values used here are declared
// from NVIDIA's public driver API reference (they are part of the driver's stable ABI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace quiver::backend::cuda {

// ---- Driver API types (cuda.h spelling) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;   // 64-bit device address (the _v2 ABI)
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// Stream capture that records only this thread's work into the graph: another thread's use of
// the driver meanwhile is neither captured nor refused.
enum CUstreamCaptureMode : int {
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
};

enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum CUfunction_attribute : int {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum CUpointer_attribute : int {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};

enum CUjit_option : int {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// cuLaunchKernelEx's configuration (CUDA 12.0+), as NVIDIA's driver API reference lays it out:
// an attribute is its 4-byte id, 4 bytes of padding and a 64-byte union of values.
enum CUlaunchAttributeID : int {
  // The kernel may start before the previous kernel of the stream has finished; it waits for
  // that kernel's results itself (griddepcontrol.wait, docs/abi.md "Overlapped launches").
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
};
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
    unsigned long long align;   // the union's alignment is 8
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72 && offsetof(CUlaunchAttribute, value) == 8);
struct CUlaunchConfig {
  unsigned int grid_x, grid_y, grid_z;
  unsigned int block_x, block_y, block_z;
  unsigned int shared_bytes;
  CUstream stream;
  CUlaunchAttribute* attrs;
  unsigned int attr_count;
};
static_assert(offsetof(CUlaunchConfig, stream) == 32 && sizeof(CUlaunchConfig) == 56);

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;

// The oldest driver quiver accepts: quiverc's PTX images use PTX ISA 7.8, which a driver for
// CUDA 11.8 or newer is needed to JIT-compile (cuDriverGetVersion's encoding: 1000 * major + 10 * minor).
constexpr int kMinDriverVersion = 11080;

// "12.4" from cuDriverGetVersion's 12040.
std::string driver_version_string(int version);

// ---- The loaded library ----
struct Driver {
#define QV_CUDA_SYMBOL(member, symbol, params) CUresult (*member) params = nullptr;
#include "cuda_symbols.h"
#undef QV_CUDA_SYMBOL

  // Optional entry points: null where the driver predates them.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig* config, CUfunction function, void** kernel_params,
                               void** extra) = nullptr;   // CUDA 12.0
  std::string library;   // the name dlopen was given
  int version = 0;       // cuDriverGetVersion

  // Loads `library` (default "libcuda.so.1"; QUIVER_CUDA_LIBRARY overrides it, which is how the
  // tests simulate a machine without the driver, or with a fake one), checks the driver version
  // and resolves every symbol of the table. Returns nullptr with `why_not` set when the library
  // is missing (with dlopen's message), older than kMinDriverVersion, or lacks a symbol (named).
  static std::shared_ptr<const Driver> load(std::string& why_not);

  // "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
  std::string error_text(CUresult result) const;
};

}  // namespace quiver::backend::cuda
