// cuda_stub.c: the CUDA door when parity is built without CUDA (CUDA=0 or no nvcc): every call
// says so, nothing pretends to work.
#include "ops/core/cuda_api.h"

#include <stdio.h>

static const char built_without_cuda[] = "parity was built without CUDA (rebuild with CUDA=1 where nvcc is present)";

bool parity_cuda_built(void) { return false; }

int parity_cuda_runtime_device_count(char *reason, size_t reason_size) {
    if (reason && reason_size) snprintf(reason, reason_size, "%s", built_without_cuda);
    return 0;
}

parity_error *parity_cuda_device_info(int index, parity_device_info *info) {
    (void)index;
    (void)info;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_malloc(int device_index, size_t bytes, void **out) {
    (void)device_index;
    (void)bytes;
    *out = NULL;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

void parity_cuda_free(int device_index, void *pointer) {
    (void)device_index;
    (void)pointer;
}

parity_error *parity_cuda_memset_zero(int device_index, void *pointer, size_t bytes) {
    (void)device_index;
    (void)pointer;
    (void)bytes;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_memcpy(int device_index, void *destination, const void *source, size_t bytes,
                                 parity_copy_direction direction) {
    (void)device_index;
    (void)destination;
    (void)source;
    (void)bytes;
    (void)direction;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_synchronize(int device_index) {
    (void)device_index;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_host_alloc(size_t bytes, void **out) {
    (void)bytes;
    *out = NULL;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

void parity_cuda_host_free(void *pointer) { (void)pointer; }

parity_error *parity_cuda_stream_create(int device_index, void **out) {
    (void)device_index;
    *out = NULL;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

void parity_cuda_stream_destroy(int device_index, void *stream) {
    (void)device_index;
    (void)stream;
}

parity_error *parity_cuda_stream_synchronize(int device_index, void *stream) {
    (void)device_index;
    (void)stream;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_stream_wait(int device_index, void *waiter, void *producer) {
    (void)device_index;
    (void)waiter;
    (void)producer;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

void parity_cuda_versions(char *runtime, size_t runtime_size, char *driver, size_t driver_size) {
    if (runtime && runtime_size) runtime[0] = '\0';
    if (driver && driver_size) driver[0] = '\0';
}

// The GPU side of rng.h.
#include "ops/core/rng.h"

parity_error *parity_rng_fill_cuda(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream,
                                   parity_rng_distribution distribution, double parameter_a, double parameter_b) {
    (void)exec;
    (void)tensor;
    (void)stream;
    (void)distribution;
    (void)parameter_a;
    (void)parameter_b;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_rng_nudge_ulps_cuda(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream) {
    (void)exec;
    (void)tensor;
    (void)stream;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_rng_words_cuda(const parity_exec *exec, parity_rng_stream stream, uint64_t offset,
                                    uint32_t *device_out, int64_t count) {
    (void)exec;
    (void)stream;
    (void)offset;
    (void)device_out;
    (void)count;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

// The device-side tensor helpers (ops/core/cuda/elementwise.h) and the GEMM (ops/core/cuda/blas.h).
#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/elementwise.h"

parity_error *parity_cuda_add_into(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source) {
    (void)exec;
    (void)destination;
    (void)source;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_convert(const parity_exec *exec, parity_tensor *destination, const parity_tensor *source) {
    (void)exec;
    (void)destination;
    (void)source;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_fill(const parity_exec *exec, parity_tensor *tensor, double value) {
    (void)exec;
    (void)tensor;
    (void)value;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_sum_of_squares(const parity_exec *exec, const parity_tensor *tensor, double *out) {
    (void)exec;
    (void)tensor;
    *out = 0;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_sketch(const parity_exec *exec, const parity_tensor *tensor, uint64_t name_hash,
                                 double out[PARITY_SKETCH_K]) {
    (void)exec;
    (void)tensor;
    (void)name_hash;
    for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = 0;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_cuda_gemm_desc parity_cuda_gemm_packed(parity_dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                                              bool transpose_a, bool transpose_b, const void *a, const void *b,
                                              void *c) {
    parity_cuda_gemm_desc desc = {.dtype = dtype, .batch = batch, .m = m, .n = n, .k = k, .transpose_a = transpose_a,
                                  .transpose_b = transpose_b, .a = a, .b = b, .c = c, .stride_a = m * k,
                                  .stride_b = k * n, .stride_c = m * n, .alpha = 1.0};
    return desc;
}

parity_error *parity_cuda_gemm(const parity_exec *exec, const parity_cuda_gemm_desc *desc) {
    (void)exec;
    (void)desc;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

parity_error *parity_cuda_blas_create(int device_index, void *stream, void **out) {
    (void)device_index;
    (void)stream;
    *out = NULL;
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", built_without_cuda);
}

void parity_cuda_blas_destroy(int device_index, void *handle) {
    (void)device_index;
    (void)handle;
}
