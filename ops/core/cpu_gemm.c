// cpu_gemm.c: batched row-major GEMM through CBLAS for the CPU eager kernels (see cpu_gemm.h).
#include "ops/core/cpu_gemm.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>

// An operand as stored: `rows` x `cols`, `stride` elements between rows.
typedef struct stored_matrix {
    int64_t rows, cols, stride;
} stored_matrix;

static stored_matrix stored(int64_t rows, int64_t cols, int64_t stride) {
    return (stored_matrix){rows, cols, stride ? stride : cols};
}

static int64_t matrix_span(stored_matrix matrix) { return matrix.rows * matrix.stride; }

// A contiguous f32 copy of `batch` stored matrices, or (`zeroed`) as many f32 zeros: C without accumulate.
static float *to_f32(const double *values, stored_matrix matrix, int64_t batch, bool zeroed) {
    int64_t count = batch * matrix.rows * matrix.cols;
    size_t size = (size_t)(count > 0 ? count : 1);
    float *copy = zeroed ? calloc(size, sizeof *copy) : malloc(size * sizeof *copy);
    if (copy && !zeroed)
        for (int64_t i = 0; i < batch; i++)
            for (int64_t row = 0; row < matrix.rows; row++)
                for (int64_t col = 0; col < matrix.cols; col++)
                    copy[(i * matrix.rows + row) * matrix.cols + col] =
                        (float)values[i * matrix_span(matrix) + row * matrix.stride + col];
    return copy;
}

static parity_error *gemm_f32(parity_cpu_gemm_shape shape, stored_matrix sa, stored_matrix sb, stored_matrix sc,
                              const double *a, const double *b, bool accumulate, double *c) {
    float *a32 = to_f32(a, sa, shape.batch, false), *b32 = to_f32(b, sb, shape.batch, false);
    float *c32 = to_f32(c, sc, shape.batch, !accumulate);
    parity_error *error = NULL;
    if (!a32 || !b32 || !c32) {
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gemm: allocating f32 copies");
    } else {
        int m = (int)shape.m, n = (int)shape.n, k = (int)shape.k;
        for (int64_t i = 0; i < shape.batch; i++)
            cblas_sgemm(CblasRowMajor, shape.transpose_a ? CblasTrans : CblasNoTrans,
                        shape.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a32 + i * shape.m * shape.k,
                        (int)sa.cols, b32 + i * shape.k * shape.n, (int)sb.cols, accumulate ? 1.0f : 0.0f,
                        c32 + i * shape.m * shape.n, n);
        for (int64_t i = 0; i < shape.batch; i++)
            for (int64_t row = 0; row < shape.m; row++)
                for (int64_t col = 0; col < shape.n; col++)
                    c[i * matrix_span(sc) + row * sc.stride + col] = c32[(i * shape.m + row) * shape.n + col];
    }
    free(a32);
    free(b32);
    free(c32);
    return error;
}

static void gemm_f64(parity_cpu_gemm_shape shape, stored_matrix sa, stored_matrix sb, stored_matrix sc, const double *a,
                     const double *b, bool accumulate, double *c) {
    int m = (int)shape.m, n = (int)shape.n, k = (int)shape.k;
    for (int64_t i = 0; i < shape.batch; i++)
        cblas_dgemm(CblasRowMajor, shape.transpose_a ? CblasTrans : CblasNoTrans,
                    shape.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a + i * matrix_span(sa), (int)sa.stride,
                    b + i * matrix_span(sb), (int)sb.stride, accumulate ? 1.0 : 0.0, c + i * matrix_span(sc), (int)sc.stride);
}

parity_error *parity_cpu_gemm(parity_dtype dtype, parity_cpu_gemm_shape shape, const double *a, const double *b,
                              bool accumulate, double *c) {
    return parity_cpu_gemm_strided(dtype, shape, (parity_cpu_gemm_strides){0, 0, 0}, a, b, accumulate, c);
}

parity_error *parity_cpu_gemm_strided(parity_dtype dtype, parity_cpu_gemm_shape shape, parity_cpu_gemm_strides strides,
                                      const double *a, const double *b, bool accumulate, double *c) {
    stored_matrix sa = stored(shape.transpose_a ? shape.k : shape.m, shape.transpose_a ? shape.m : shape.k, strides.a);
    stored_matrix sb = stored(shape.transpose_b ? shape.n : shape.k, shape.transpose_b ? shape.k : shape.n, strides.b);
    stored_matrix sc = stored(shape.m, shape.n, strides.c);
    if (shape.batch < 0 || shape.m < 0 || shape.n < 0 || shape.k < 0 || shape.m > INT_MAX || shape.n > INT_MAX ||
        shape.k > INT_MAX)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "gemm: sizes m=%lld n=%lld k=%lld outside what CBLAS takes",
                            (long long)shape.m, (long long)shape.n, (long long)shape.k);
    if (sa.stride < sa.cols || sb.stride < sb.cols || sc.stride < sc.cols || sa.stride > INT_MAX || sb.stride > INT_MAX ||
        sc.stride > INT_MAX)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "gemm: row strides %lld, %lld, %lld for rows of %lld, %lld, %lld",
                            (long long)sa.stride, (long long)sb.stride, (long long)sc.stride, (long long)sa.cols,
                            (long long)sb.cols, (long long)sc.cols);
    if (shape.batch == 0 || shape.m == 0 || shape.n == 0) return NULL;
    if (shape.k == 0) { // an empty sum: CBLAS implementations disagree on whether they touch C
        if (!accumulate)
            for (int64_t i = 0; i < shape.batch; i++)
                for (int64_t row = 0; row < shape.m; row++)
                    for (int64_t col = 0; col < shape.n; col++) c[i * matrix_span(sc) + row * sc.stride + col] = 0;
        return NULL;
    }
    if (dtype == PARITY_F64) {
        gemm_f64(shape, sa, sb, sc, a, b, accumulate, c);
        return NULL;
    }
    return gemm_f32(shape, sa, sb, sc, a, b, accumulate, c);
}
