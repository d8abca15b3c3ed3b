// A stand-in for libcuda.so.1 that the CUDA backend loads through QUIVER_CUDA_LIBRARY, so that
// driver detection can be tested on machines without an NVIDIA GPU: a driver that is too old,
// one that finds no device, one with devices that cannot be opened. It exports every entry
// point of runtime/backends/cuda/cuda_symbols.h under its versioned name (built a second time
// with QV_FAKE_CUDA_WITHOUT_LAUNCH, it lacks cuLaunchKernel, to test the missing-symbol report).
//
// QUIVER_FAKE_CUDA selects the behaviour:
//   too_old        cuDriverGetVersion reports 10.2
//   init_fails     cuInit returns CUDA_ERROR_NO_DEVICE (what the real driver does without a GPU; default)
//   zero_devices   cuInit succeeds, cuDeviceGetCount reports 0
//   broken_devices 2 devices, whose primary context cannot be created (CUDA_ERROR_OUT_OF_MEMORY)
// Every call that a working device would need beyond that returns CUDA_ERROR_NOT_SUPPORTED.
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backends/cuda/cuda_driver.h"

using namespace quiver::backend::cuda;

namespace {

constexpr CUresult kNoDevice = 100;       // CUDA_ERROR_NO_DEVICE
constexpr CUresult kOutOfMemory = 2;      // CUDA_ERROR_OUT_OF_MEMORY
constexpr CUresult kNotSupported = 801;   // CUDA_ERROR_NOT_SUPPORTED

std::string_view mode() {
  const char* m = std::getenv("QUIVER_FAKE_CUDA");
  return m && *m ? m : "init_fails";
}

}  // namespace

extern "C" {

CUresult cuDriverGetVersion(int* version) {
  *version = mode() == "too_old" ? 10020 : 12040;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int) { return mode() == "init_fails" ? kNoDevice : CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    default: return 1;   // CUDA_ERROR_INVALID_VALUE
  }
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
    case kNoDevice: *text = "no CUDA-capable device is detected (fake driver)"; return CUDA_SUCCESS;
    case kOutOfMemory: *text = "out of memory (fake driver)"; return CUDA_SUCCESS;
    case kNotSupported: *text = "operation not supported (fake driver)"; return CUDA_SUCCESS;
    default: return 1;
  }
}

CUresult cuDeviceGetCount(int* count) {
  *count = mode() == "broken_devices" ? 2 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  const char text[] = "Fake GPU 0";
  std::strncpy(name, text, static_cast<size_t>(length));
  if (length > 0) name[length - 1] = '\0';
  if (length > 9) name[9] = static_cast<char>('0' + device % 10);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice) { return kOutOfMemory; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return kNotSupported; }
CUresult cuStreamCreate(CUstream*, unsigned int) { return kNotSupported; }
CUresult cuStreamDestroy_v2(CUstream) { return kNotSupported; }
CUresult cuStreamSynchronize(CUstream) { return kNotSupported; }
CUresult cuEventCreate(void**, unsigned) { return kNotSupported; }
CUresult cuEventDestroy_v2(void*) { return kNotSupported; }
CUresult cuEventRecord(void*, CUstream) { return kNotSupported; }
CUresult cuEventSynchronize(void*) { return kNotSupported; }
CUresult cuEventElapsedTime(float*, void*, void*) { return kNotSupported; }
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t) { return kNotSupported; }
CUresult cuMemFree_v2(CUdeviceptr) { return kNotSupported; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream) { return kNotSupported; }
CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream) { return kNotSupported; }
CUresult cuPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr) { return kNotSupported; }
CUresult cuMemGetAddressRange_v2(CUdeviceptr*, size_t*, CUdeviceptr) { return kNotSupported; }
CUresult cuModuleLoadDataEx(CUmodule*, const void*, unsigned int, CUjit_option*, void**) { return kNotSupported; }
CUresult cuModuleUnload(CUmodule) { return kNotSupported; }
CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*) { return kNotSupported; }
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return kNotSupported; }
CUresult cuStreamBeginCapture_v2(CUstream, int) { return kNotSupported; }
CUresult cuStreamEndCapture(CUstream, void**) { return kNotSupported; }
CUresult cuGraphInstantiateWithFlags(void**, void*, unsigned long long) { return kNotSupported; }
CUresult cuGraphLaunch(void*, CUstream) { return kNotSupported; }
CUresult cuGraphExecDestroy(void*) { return kNotSupported; }
CUresult cuGraphDestroy(void*) { return kNotSupported; }
#ifndef QV_FAKE_CUDA_WITHOUT_LAUNCH
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, CUstream, void**, void**) {
  return kNotSupported;
}
#endif

}  // extern "C"
