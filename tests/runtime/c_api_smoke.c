/* The C API used from C: compiled as C so quiver.h is checked to be valid C. Runs saxpy on a
 * fat binary given as bytes and compares it with a host reference computed here. */
#include "c_api_smoke.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    qv_status st_ = (call);                                                           \
    if (st_ != QV_SUCCESS) {                                                          \
      snprintf(message, capacity, "%s failed (%d): %s", #call, (int)st_, qv_last_error_message()); \
      goto done;                                                                      \
    }                                                                                 \
  } while (0)

int qv_test_c_saxpy(const void* fatbin, size_t size, uint32_t seed, char* message, size_t capacity) {
  int ok = 0;
  const uint32_t n = 10000 + seed % 1000;
  qv_device dev = NULL;
  qv_module mod = NULL;
  qv_kernel k = NULL;
  qv_buffer x = NULL, y = NULL;
  float* hx = malloc(n * sizeof(float));
  float* hy = malloc(n * sizeof(float));
  float* got = malloc(n * sizeof(float));
  uint32_t state = seed * 2654435761u + 1u;
  message[0] = '\0';
  if (!hx || !hy || !got) {
    snprintf(message, capacity, "out of host memory");
    goto done;
  }
  for (uint32_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    hx[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
    state = state * 1664525u + 1013904223u;
    hy[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
    got[i] = NAN;
  }

  CHECK(qv_device_open("cpu", &dev));
  CHECK(qv_module_load_memory(dev, fatbin, size, "c_api.qfb", &mod));
  CHECK(qv_buffer_alloc(dev, QV_TYPE_F32, n, &x));
  CHECK(qv_buffer_alloc(dev, QV_TYPE_F32, n, &y));
  CHECK(qv_buffer_upload(x, hx, n * sizeof(float)));
  CHECK(qv_buffer_upload(y, hy, n * sizeof(float)));
  CHECK(qv_kernel_get(mod, "saxpy", &k));
  {
    qv_arg args[4];
    uint32_t grid[3] = {(n + 255) / 256, 1, 1};
    args[0] = qv_arg_buffer(x);
    args[1] = qv_arg_buffer(y);
    args[2] = qv_arg_f32(-0.75f);
    args[3] = qv_arg_u32(n);
    CHECK(qv_kernel_launch(k, grid, args, 4));
  }
  CHECK(qv_device_synchronize(dev));
  CHECK(qv_buffer_download(y, got, n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) {
    float want = -0.75f * hx[i] + hy[i];
    if (!(got[i] == want)) {
      snprintf(message, capacity, "element %u: got %g, want %g", i, got[i], want);
      goto done;
    }
  }
  ok = 1;
done:
  /* Released in an order that leaves the device first: handles keep what they need alive. */
  if (dev) qv_device_close(dev);
  if (k) qv_kernel_free(k);
  if (mod) qv_module_free(mod);
  if (x) qv_buffer_free(x);
  if (y) qv_buffer_free(y);
  free(hx);
  free(hy);
  free(got);
  return ok;
}
