// Entry point of c_api_smoke.c (compiled as C).
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
// Returns 1 on success; otherwise 0 with the reason in `message`.
int qv_test_c_saxpy(const void* fatbin, size_t size, uint32_t seed, char* message, size_t capacity);
#ifdef __cplusplus
}
#endif
