/* quiver C API: the surface of <quiver/runtime.h> with status codes, for other languages.
 *
 * Every function returns QV_SUCCESS or an error status; on error, qv_last_error_message()
 * gives the message (which names the file, kernel or argument at fault) for the calling thread.
 * Output parameters are written only on success.
 *
 * Handles are reference-counted internally: a buffer or module keeps its device alive, so they
 * may be released in any order. Each handle must be released exactly once.
 *
 *   qv_device dev;   qv_device_open(NULL, &dev);                    // best backend
 *   qv_module mod;   qv_module_load_file(dev, "ops.qfb", &mod);
 *   qv_buffer x;     qv_buffer_alloc(dev, QV_TYPE_F32, n, &x);
 *   qv_buffer_upload(x, host, n * sizeof(float));
 *   qv_kernel k;     qv_kernel_get(mod, "saxpy", &k);
 *   qv_arg args[] = {qv_arg_buffer(x), qv_arg_buffer(y), qv_arg_f32(2.0f), qv_arg_u32(n)};
 *   uint32_t grid[3] = {(n + 255) / 256, 1, 1};
 *   qv_kernel_launch(k, grid, args, 4);
 *   qv_device_synchronize(dev);
 */
#ifndef QUIVER_QUIVER_H
#define QUIVER_QUIVER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The values equal quiver::ErrorCode. */
typedef enum qv_status {
  QV_SUCCESS = 0,
  QV_ERROR_INVALID_ARGUMENT = 1,    /* wrong launch arguments, sizes, names, null handles */
  QV_ERROR_INVALID_FAT_BINARY = 2,  /* malformed / truncated / unsupported .qfb */
  QV_ERROR_NOT_FOUND = 3,           /* no such kernel, no image for this device, no such backend */
  QV_ERROR_BACKEND_UNAVAILABLE = 4, /* driver library or device missing */
  QV_ERROR_DEVICE = 5,              /* the driver reported a failure */
  QV_ERROR_OUT_OF_MEMORY = 6,
  QV_ERROR_INTERNAL = 7             /* an unexpected C++ exception (its message is kept) */
} qv_status;

/* Element and scalar types, in the kernel language's spelling (same order as the manifest). */
typedef enum qv_type {
  QV_TYPE_BOOL = 0, /* a scalar bool is passed as 0/1; see qv_arg_bool */
  QV_TYPE_I8,
  QV_TYPE_U8,
  QV_TYPE_I16,
  QV_TYPE_U16,
  QV_TYPE_I32,
  QV_TYPE_U32,
  QV_TYPE_I64,
  QV_TYPE_U64,
  QV_TYPE_F16,  /* IEEE binary16, as its uint16_t bit pattern */
  QV_TYPE_BF16, /* bfloat16, as its uint16_t bit pattern */
  QV_TYPE_F32,
  QV_TYPE_F64
} qv_type;

/* DLPack's tensor (see <dlpack/dlpack.h>); only pointers to it cross this API. */
struct DLManagedTensor;

typedef struct qv_device_t* qv_device;
typedef struct qv_module_t* qv_module;
typedef struct qv_buffer_t* qv_buffer;
typedef struct qv_kernel_t* qv_kernel;

/* One launch argument: a buffer (its element type is the one it was allocated with), or a
 * scalar whose `type` and bytes (little-endian, in scalar.bytes from offset 0) are given. */
typedef enum qv_arg_kind { QV_ARG_BUFFER = 0, QV_ARG_SCALAR = 1 } qv_arg_kind;
typedef struct qv_arg {
  qv_arg_kind kind;
  qv_type type;       /* scalars only */
  qv_buffer buffer;   /* buffers only */
  union {
    uint8_t bytes[8];
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    uint16_t bits16;
  } scalar;
} qv_arg;

/* The message of the calling thread's last failed call ("" if none). Valid until that
 * thread's next failing call. */
const char* qv_last_error_message(void);

/* Devices. `backend` is "cuda", "vulkan", "cpu", ... (device 0 of it), "cuda:1" (device 1),
 * or NULL / "" for the best one (QUIVER_BACKEND, same syntax, overrides the automatic choice).
 * An index past the backend's devices fails with QV_ERROR_NOT_FOUND. */
qv_status qv_device_open(const char* backend, qv_device* out);
qv_status qv_device_close(qv_device dev);
qv_status qv_device_synchronize(qv_device dev);
/* Copies the name, NUL-terminated and truncated to `capacity` bytes. */
qv_status qv_device_backend_name(qv_device dev, char* name, size_t capacity);
qv_status qv_device_name(qv_device dev, char* name, size_t capacity);
/* How many devices `backend` can open here (0 when its driver is missing or reports none). */
qv_status qv_device_count(const char* backend, size_t* count);
/* N of "cuda:N". */
qv_status qv_device_index(qv_device dev, size_t* index);
/* Interop (docs/runtime.md): the CUstream / VkQueue / NULL (cpu) this device submits to, and
 * the CUcontext / VkDevice / NULL (cpu) it lives in. */
qv_status qv_device_native_stream(qv_device dev, void** stream);
qv_status qv_device_native_device(qv_device dev, void** device);

/* Modules (fat binaries). The memory variant copies `bytes`; `label` (may be NULL) names it
 * in error messages. */
qv_status qv_module_load_file(qv_device dev, const char* path, qv_module* out);
qv_status qv_module_load_memory(qv_device dev, const void* bytes, size_t size, const char* label,
                                qv_module* out);
qv_status qv_module_free(qv_module mod);

/* Buffers of `count` elements of `type`. upload/download copy `bytes` (at most the buffer's
 * size) from / to host memory; download waits for earlier launches. */
qv_status qv_buffer_alloc(qv_device dev, qv_type type, size_t count, qv_buffer* out);
qv_status qv_buffer_upload(qv_buffer buf, const void* src, size_t bytes);
qv_status qv_buffer_download(qv_buffer buf, void* dst, size_t bytes);
qv_status qv_buffer_count(qv_buffer buf, size_t* count);   /* elements */
qv_status qv_buffer_free(qv_buffer buf);
/* Interop (docs/runtime.md): the CUdeviceptr / VkBuffer / host address of the buffer. */
qv_status qv_buffer_native_handle(qv_buffer buf, uint64_t* handle);
/* DLPack (cuda and cpu backends). to_dlpack: a 1-D tensor of the buffer's elements that keeps
 * the memory alive until its deleter is called (exactly once). from_dlpack: wraps a compact
 * tensor of this device without copying; the buffer's type is the tensor's dtype. On success
 * the buffer owns the tensor (its deleter runs once, after qv_buffer_free and the launches
 * using it); on failure the caller still owns it. */
qv_status qv_buffer_to_dlpack(qv_buffer buf, struct DLManagedTensor** out);
qv_status qv_buffer_from_dlpack(qv_device dev, struct DLManagedTensor* tensor, qv_buffer* out);

/* Kernels, by canonical name ("saxpy", "scale_rows<float, 4096>"). The arguments are checked
 * against the manifest (count, buffer vs scalar, element type, same device) and nothing is
 * launched when a check fails. Scalar types must match exactly (QV_TYPE_I32 is not accepted
 * for a uint32_t parameter). A `qv::vec<T, N>*` parameter takes a buffer of element type T
 * whose element count is a multiple of N. grid: blocks in x, y, z, each >= 1. */
qv_status qv_kernel_get(qv_module mod, const char* name, qv_kernel* out);
qv_status qv_kernel_launch(qv_kernel kernel, const uint32_t grid[3], const qv_arg* args,
                           size_t arg_count);
qv_status qv_kernel_free(qv_kernel kernel);

/* Argument constructors. */
static inline qv_arg qv_arg_buffer(qv_buffer b) {
  qv_arg a;
  memset(&a, 0, sizeof a);
  a.kind = QV_ARG_BUFFER;
  a.buffer = b;
  return a;
}
static inline qv_arg qv_arg_scalar_bytes(qv_type t, const void* value, size_t size) {
  qv_arg a;
  memset(&a, 0, sizeof a);
  a.kind = QV_ARG_SCALAR;
  a.type = t;
  memcpy(a.scalar.bytes, value, size < 8 ? size : 8);
  return a;
}
static inline qv_arg qv_arg_bool(int v) {
  uint8_t b = v ? 1 : 0;
  return qv_arg_scalar_bytes(QV_TYPE_BOOL, &b, 1);
}
static inline qv_arg qv_arg_i32(int32_t v) { return qv_arg_scalar_bytes(QV_TYPE_I32, &v, 4); }
static inline qv_arg qv_arg_u32(uint32_t v) { return qv_arg_scalar_bytes(QV_TYPE_U32, &v, 4); }
static inline qv_arg qv_arg_i64(int64_t v) { return qv_arg_scalar_bytes(QV_TYPE_I64, &v, 8); }
static inline qv_arg qv_arg_u64(uint64_t v) { return qv_arg_scalar_bytes(QV_TYPE_U64, &v, 8); }
static inline qv_arg qv_arg_f32(float v) { return qv_arg_scalar_bytes(QV_TYPE_F32, &v, 4); }
static inline qv_arg qv_arg_f64(double v) { return qv_arg_scalar_bytes(QV_TYPE_F64, &v, 8); }
static inline qv_arg qv_arg_f16_bits(uint16_t bits) { return qv_arg_scalar_bytes(QV_TYPE_F16, &bits, 2); }
static inline qv_arg qv_arg_bf16_bits(uint16_t bits) { return qv_arg_scalar_bytes(QV_TYPE_BF16, &bits, 2); }

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_QUIVER_H */
