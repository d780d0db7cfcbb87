// cpu_gemm.c: batched row-major GEMM through CBLAS for the CPU eager kernels (see cpu_gemm.h).
#include "ops/core/cpu_gemm.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>

static float *to_f32(const double *values, int64_t count) {
    float *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof *copy);
    if (copy)
        for (int64_t i = 0; i < count; i++) copy[i] = (float)values[i];
    return copy;
}

static parity_error *gemm_f32(parity_cpu_gemm_shape shape, const double *a, const double *b, bool accumulate, double *c) {
    int64_t a_size = shape.batch * shape.m * shape.k, b_size = shape.batch * shape.k * shape.n;
    int64_t c_size = shape.batch * shape.m * shape.n;
    float *a32 = to_f32(a, a_size), *b32 = to_f32(b, b_size);
    float *c32 = accumulate ? to_f32(c, c_size) : calloc((size_t)c_size, sizeof *c32);
    parity_error *error = NULL;
    if (!a32 || !b32 || !c32) {
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gemm: allocating f32 copies");
    } else {
        int m = (int)shape.m, n = (int)shape.n, k = (int)shape.k;
        for (int64_t i = 0; i < shape.batch; i++)
            cblas_sgemm(CblasRowMajor, shape.transpose_a ? CblasTrans : CblasNoTrans,
                        shape.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a32 + i * shape.m * shape.k,
                        shape.transpose_a ? m : k, b32 + i * shape.k * shape.n, shape.transpose_b ? k : n,
                        accumulate ? 1.0f : 0.0f, c32 + i * shape.m * shape.n, n);
        for (int64_t i = 0; i < c_size; i++) c[i] = c32[i];
    }
    free(a32);
    free(b32);
    free(c32);
    return error;
}

static void gemm_f64(parity_cpu_gemm_shape shape, const double *a, const double *b, bool accumulate, double *c) {
    int m = (int)shape.m, n = (int)shape.n, k = (int)shape.k;
    for (int64_t i = 0; i < shape.batch; i++)
        cblas_dgemm(CblasRowMajor, shape.transpose_a ? CblasTrans : CblasNoTrans,
                    shape.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a + i * shape.m * shape.k,
                    shape.transpose_a ? m : k, b + i * shape.k * shape.n, shape.transpose_b ? k : n,
                    accumulate ? 1.0 : 0.0, c + i * shape.m * shape.n, n);
}

parity_error *parity_cpu_gemm(parity_dtype dtype, parity_cpu_gemm_shape shape, const double *a, const double *b,
                              bool accumulate, double *c) {
    if (shape.batch < 0 || shape.m < 0 || shape.n < 0 || shape.k < 0 || shape.m > INT_MAX || shape.n > INT_MAX ||
        shape.k > INT_MAX)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "gemm: sizes m=%lld n=%lld k=%lld outside what CBLAS takes",
                            (long long)shape.m, (long long)shape.n, (long long)shape.k);
    if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return NULL;
    if (shape.k == 0) { // an empty sum: CBLAS implementations disagree on whether they touch C
        if (!accumulate)
            for (int64_t i = 0; i < shape.batch * shape.m * shape.n; i++) c[i] = 0;
        return NULL;
    }
    if (dtype == PARITY_F64) {
        gemm_f64(shape, a, b, accumulate, c);
        return NULL;
    }
    return gemm_f32(shape, a, b, accumulate, c);
}
