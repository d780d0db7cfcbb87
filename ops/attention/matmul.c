// matmul.c: the GEMM behind matmul.h (CBLAS, f64 or f32 by the run's dtype).
#include "ops/attention/matmul.h"

#include <cblas.h>
#include <stdlib.h>

static float *f32_copy(parity_attention_operand operand) {
    float *copy = malloc((size_t)(operand.rows * operand.cols > 0 ? operand.rows * operand.cols : 1) * sizeof *copy);
    if (!copy) return NULL;
    for (int64_t row = 0; row < operand.rows; row++)
        for (int64_t col = 0; col < operand.cols; col++)
            copy[row * operand.cols + col] = (float)operand.data[row * operand.stride + col];
    return copy;
}

parity_error *parity_attention_matmul(parity_dtype dtype, parity_attention_operand a, parity_attention_operand b,
                                      double *c, int64_t c_stride) {
    int64_t m = a.transposed ? a.cols : a.rows, k = a.transposed ? a.rows : a.cols;
    int64_t n = b.transposed ? b.rows : b.cols, k_b = b.transposed ? b.cols : b.rows;
    if (k != k_b)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "attention matmul: inner sizes %lld and %lld differ", (long long)k,
                            (long long)k_b);
    if (m == 0 || n == 0) return NULL;
    if (k == 0) {
        for (int64_t row = 0; row < m; row++)
            for (int64_t col = 0; col < n; col++) c[row * c_stride + col] = 0;
        return NULL;
    }
    CBLAS_TRANSPOSE transpose_a = a.transposed ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE transpose_b = b.transposed ? CblasTrans : CblasNoTrans;
    if (dtype == PARITY_F64) {
        cblas_dgemm(CblasRowMajor, transpose_a, transpose_b, (int)m, (int)n, (int)k, 1.0, a.data, (int)a.stride, b.data,
                    (int)b.stride, 0.0, c, (int)c_stride);
        return NULL;
    }
    float *a32 = f32_copy(a), *b32 = f32_copy(b);
    float *c32 = malloc((size_t)(m * n) * sizeof *c32);
    parity_error *error = NULL;
    if (!a32 || !b32 || !c32) {
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "attention matmul: f32 copies of a %lld x %lld x %lld product",
                             (long long)m, (long long)n, (long long)k);
    } else {
        cblas_sgemm(CblasRowMajor, transpose_a, transpose_b, (int)m, (int)n, (int)k, 1.0f, a32, (int)a.cols, b32,
                    (int)b.cols, 0.0f, c32, (int)n);
        for (int64_t row = 0; row < m; row++)
            for (int64_t col = 0; col < n; col++) c[row * c_stride + col] = (double)c32[row * n + col];
    }
    free(a32);
    free(b32);
    free(c32);
    return error;
}
