// cross_entropy_cpu.c: GEMM, log-softmax, NLL sum and the logits gradient for the CPU backends
// (see cross_entropy_cpu.h for the rounding points).
#include "ops/cross_entropy/cross_entropy_cpu.h"

#include <math.h>

#include "ops/core/cpu_gemm.h"
#include "ops/core/cpu_math.h"

parity_error *parity_cross_entropy_cpu_gemm(parity_dtype storage, bool transpose_a, bool transpose_b, int64_t m,
                                            int64_t n, int64_t k, const double *a, const double *b, double *c) {
    parity_cpu_gemm_shape shape = {.batch = 1, .m = m, .n = n, .k = k, .transpose_a = transpose_a, .transpose_b = transpose_b};
    PARITY_TRY_CONTEXT(parity_cpu_gemm(storage, shape, a, b, false, c), "cross_entropy: GEMM of (%lld, %lld) x (%lld, %lld)",
                       (long long)m, (long long)k, (long long)k, (long long)n);
    if (storage != PARITY_F64)
        for (int64_t i = 0; i < m * n; i++) c[i] = parity_round_storage(c[i], storage);
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
