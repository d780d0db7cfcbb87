// cuda_api.h: the only door from C code to the CUDA runtime. Implemented in ops/core/cuda/*.cu when
// parity is built with CUDA, and by ops/core/cuda_stub.c (every call reports "built without CUDA")
// otherwise, so C code never includes CUDA headers and a CPU-only build links.
#ifndef PARITY_CUDA_API_H
#define PARITY_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/device.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

bool parity_cuda_built(void);
// Number of devices, or 0 with `reason` filled in.
int parity_cuda_runtime_device_count(char *reason, size_t reason_size);
parity_error *parity_cuda_device_info(int index, parity_device_info *info);

parity_error *parity_cuda_malloc(int device_index, size_t bytes, void **out);
void parity_cuda_free(int device_index, void *pointer);
parity_error *parity_cuda_memset_zero(int device_index, void *pointer, size_t bytes);

typedef enum parity_copy_direction {
    PARITY_COPY_HOST_TO_DEVICE,
    PARITY_COPY_DEVICE_TO_HOST,
    PARITY_COPY_DEVICE_TO_DEVICE,
} parity_copy_direction;

parity_error *parity_cuda_memcpy(int device_index, void *destination, const void *source, size_t bytes,
                                 parity_copy_direction direction);
parity_error *parity_cuda_synchronize(int device_index);

// Page-locked host memory (cudaMallocHost), for copies that are really asynchronous.
parity_error *parity_cuda_host_alloc(size_t bytes, void **out);
void parity_cuda_host_free(void *pointer);

// Streams (cudaStream_t as void *) behind ops/core/exec.h. parity_cuda_stream_create makes a blocking
// stream (cudaStreamCreate: ordered with the legacy default stream).
parity_error *parity_cuda_stream_create(int device_index, void **out);
void parity_cuda_stream_destroy(int device_index, void *stream);
parity_error *parity_cuda_stream_synchronize(int device_index, void *stream);
// Work queued on `waiter` after this call waits for the work queued on `producer` before it (an event).
parity_error *parity_cuda_stream_wait(int device_index, void *waiter, void *producer);

// Runtime/driver versions as "13.0" strings (empty when not built with CUDA).
void parity_cuda_versions(char *runtime, size_t runtime_size, char *driver, size_t driver_size);

#ifdef __cplusplus
}
#endif
#endif
