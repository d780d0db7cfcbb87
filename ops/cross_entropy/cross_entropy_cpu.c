// cross_entropy_cpu.c: GEMM, log-softmax, NLL sum and the logits gradient for the CPU backends
// (see cross_entropy_cpu.h for the rounding points).
#include "ops/cross_entropy/cross_entropy_cpu.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "ops/core/cpu_math.h"

static float *float_copy(const double *values, int64_t count) {
    float *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof *copy);
    if (copy)
        for (int64_t i = 0; i < count; i++) copy[i] = (float)values[i];
    return copy;
}

parity_error *parity_cross_entropy_cpu_gemm(parity_dtype storage, bool transpose_a, bool transpose_b, int64_t m,
                                            int64_t n, int64_t k, const double *a, const double *b, double *c) {
    PARITY_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, PARITY_ERROR_SHAPE,
                 "cross_entropy: GEMM of (%lld, %lld) x (%lld, %lld) exceeds the CBLAS int range", (long long)m,
                 (long long)k, (long long)k, (long long)n);
    int lda = transpose_a ? (int)m : (int)k, ldb = transpose_b ? (int)k : (int)n;
    enum CBLAS_TRANSPOSE op_a = transpose_a ? CblasTrans : CblasNoTrans, op_b = transpose_b ? CblasTrans : CblasNoTrans;
    if (storage == PARITY_F64) {
        cblas_dgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, 1.0, a, lda, b, ldb, 0.0, c, (int)n);
        return NULL;
    }
    float *a32 = float_copy(a, m * k), *b32 = float_copy(b, k * n);
    float *c32 = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof *c32);
    if (!a32 || !b32 || !c32) {
        free(a32);
        free(b32);
        free(c32);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "cross_entropy: allocating an f32 GEMM of (%lld, %lld)", (long long)m,
                            (long long)n);
    }
    cblas_sgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, 1.0f, a32, lda, b32, ldb, 0.0f, c32, (int)n);
    for (int64_t i = 0; i < m * n; i++) c[i] = parity_round_storage((double)c32[i], storage);
    free(a32);
    free(b32);
    free(c32);
    return NULL;
}

void parity_cross_entropy_cpu_log_softmax(parity_dtype storage, int64_t rows, int64_t vocab, const double *logits,
                                          double *log_probs) {
    for (int64_t row = 0; row < rows; row++) {
        const double *x = logits + row * vocab;
        double *out = log_probs + row * vocab;
        double max = x[0];
        for (int64_t j = 1; j < vocab; j++) max = fmax(max, x[j]);
        double sum = 0;
        for (int64_t j = 0; j < vocab; j++)
            sum = parity_round_compute(sum + parity_round_compute(exp(parity_round_compute(x[j] - max, storage)), storage),
                                       storage);
        double log_sum = parity_round_compute(log(sum), storage);
        for (int64_t j = 0; j < vocab; j++)
            out[j] = parity_round_compute(parity_round_compute(x[j] - max, storage) - log_sum, storage);
    }
}

double parity_cross_entropy_cpu_nll_sum(parity_dtype storage, int64_t rows, int64_t vocab, const double *log_probs,
                                        const int64_t *targets, int64_t ignore_index) {
    double sum = 0;
    for (int64_t row = 0; row < rows; row++)
        if (targets[row] != ignore_index)
            sum = parity_round_compute(sum - log_probs[row * vocab + targets[row]], storage);
    return sum;
}

double parity_cross_entropy_cpu_divisor(parity_dtype storage, int64_t num_items_in_batch, int64_t valid_count) {
    return parity_round_compute((double)(num_items_in_batch > 0 ? num_items_in_batch : valid_count), storage);
}

void parity_cross_entropy_cpu_dlogits(parity_dtype storage, int64_t rows, int64_t vocab, const double *log_probs,
                                      const int64_t *targets, int64_t ignore_index, double g, double *dlogits) {
    for (int64_t row = 0; row < rows; row++) {
        double *out = dlogits + row * vocab;
        if (targets[row] == ignore_index) {
            for (int64_t j = 0; j < vocab; j++) out[j] = 0;
            continue;
        }
        const double *logp = log_probs + row * vocab;
        for (int64_t j = 0; j < vocab; j++) {
            double probability = parity_round_compute(exp(logp[j]), storage);
            double onehot = j == targets[row] ? g : 0;
            double value = parity_round_compute(onehot - parity_round_compute(probability * g, storage), storage);
            out[j] = parity_round_storage(value, storage);
        }
    }
}
