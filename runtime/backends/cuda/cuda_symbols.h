// Every CUDA driver API entry point the backend uses, in one X-macro table:
//   QV_CUDA_SYMBOL(member name, exported symbol, parameter list)
// All of them return CUresult. Where the driver's ABI changed, the exported name carries the
// version suffix that cuda.h maps the plain name to (`cuMemAlloc` -> `cuMemAlloc_v2`, ...): the
// unsuffixed exports keep the old 32-bit-pointer ABI and must not be called.
// Included by cuda_driver.h after the driver types are declared; no include guard on purpose.

QV_CUDA_SYMBOL(cuInit, "cuInit", (unsigned int flags))
QV_CUDA_SYMBOL(cuDriverGetVersion, "cuDriverGetVersion", (int* version))
QV_CUDA_SYMBOL(cuGetErrorName, "cuGetErrorName", (CUresult error, const char** name))
QV_CUDA_SYMBOL(cuGetErrorString, "cuGetErrorString", (CUresult error, const char** text))

QV_CUDA_SYMBOL(cuDeviceGetCount, "cuDeviceGetCount", (int* count))
QV_CUDA_SYMBOL(cuDeviceGet, "cuDeviceGet", (CUdevice* device, int ordinal))
QV_CUDA_SYMBOL(cuDeviceGetName, "cuDeviceGetName", (char* name, int length, CUdevice device))
QV_CUDA_SYMBOL(cuDeviceGetAttribute, "cuDeviceGetAttribute",
               (int* value, CUdevice_attribute attribute, CUdevice device))

QV_CUDA_SYMBOL(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",
               (CUcontext* context, CUdevice device))
QV_CUDA_SYMBOL(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice device))
QV_CUDA_SYMBOL(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext context))

QV_CUDA_SYMBOL(cuStreamCreate, "cuStreamCreate", (CUstream* stream, unsigned int flags))
QV_CUDA_SYMBOL(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream stream))
QV_CUDA_SYMBOL(cuStreamSynchronize, "cuStreamSynchronize", (CUstream stream))
QV_CUDA_SYMBOL(cuEventCreate, "cuEventCreate", (CUevent* event, unsigned int flags))
QV_CUDA_SYMBOL(cuEventDestroy, "cuEventDestroy_v2", (CUevent event))
QV_CUDA_SYMBOL(cuEventRecord, "cuEventRecord", (CUevent event, CUstream stream))
QV_CUDA_SYMBOL(cuEventSynchronize, "cuEventSynchronize", (CUevent event))
QV_CUDA_SYMBOL(cuEventElapsedTime, "cuEventElapsedTime", (float* ms, CUevent start, CUevent end))

QV_CUDA_SYMBOL(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr* pointer, size_t bytes))
QV_CUDA_SYMBOL(cuMemFree, "cuMemFree_v2", (CUdeviceptr pointer))
QV_CUDA_SYMBOL(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",
               (CUdeviceptr dst, const void* src, size_t bytes, CUstream stream))
QV_CUDA_SYMBOL(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",
               (void* dst, CUdeviceptr src, size_t bytes, CUstream stream))

QV_CUDA_SYMBOL(cuPointerGetAttribute, "cuPointerGetAttribute",
               (void* data, CUpointer_attribute attribute, CUdeviceptr pointer))
QV_CUDA_SYMBOL(cuMemGetAddressRange, "cuMemGetAddressRange_v2",
               (CUdeviceptr* base, size_t* bytes, CUdeviceptr pointer))

QV_CUDA_SYMBOL(cuModuleLoadDataEx, "cuModuleLoadDataEx",
               (CUmodule* module, const void* image, unsigned int option_count,
                CUjit_option* options, void** option_values))
QV_CUDA_SYMBOL(cuModuleUnload, "cuModuleUnload", (CUmodule module))
QV_CUDA_SYMBOL(cuModuleGetFunction, "cuModuleGetFunction",
               (CUfunction* function, CUmodule module, const char* name))
QV_CUDA_SYMBOL(cuFuncSetAttribute, "cuFuncSetAttribute",
               (CUfunction function, CUfunction_attribute attribute, int value))
QV_CUDA_SYMBOL(cuLaunchKernel, "cuLaunchKernel",
               (CUfunction function, unsigned int grid_x, unsigned int grid_y,
                unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                void** kernel_params, void** extra))

// Recorded launch sequences (Device::record): captured from the stream, replayed as one graph.
QV_CUDA_SYMBOL(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream stream, CUstreamCaptureMode mode))
QV_CUDA_SYMBOL(cuStreamEndCapture, "cuStreamEndCapture", (CUstream stream, CUgraph* graph))
QV_CUDA_SYMBOL(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",
               (CUgraphExec* exec, CUgraph graph, unsigned long long flags))
QV_CUDA_SYMBOL(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec exec, CUstream stream))
QV_CUDA_SYMBOL(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec exec))
QV_CUDA_SYMBOL(cuGraphDestroy, "cuGraphDestroy", (CUgraph graph))
