// rms_statistics.c: see rms_statistics.h.
#include "ops/rms_norm/rms_statistics.h"

#include <math.h>

#include "ops/core/cpu_math.h"

double parity_rms_inverse(const double *row, int64_t hidden, double eps, parity_dtype dtype) {
    double sum_squares = 0;
    for (int64_t i = 0; i < hidden; i++)
        sum_squares = parity_round_compute(sum_squares + parity_round_compute(row[i] * row[i], dtype), dtype);
    double mean = parity_round_compute(sum_squares / (double)hidden, dtype);
    return parity_round_compute(1.0 / sqrt(parity_round_compute(mean + eps, dtype)), dtype);
}

void parity_rms_input_gradient(const double *row, const double *g, int64_t hidden, double inverse, parity_dtype dtype,
                               double *dx) {
    double dot = 0; // sum(g * x_hat)
    for (int64_t i = 0; i < hidden; i++) {
        double x_hat = parity_round_compute(row[i] * inverse, dtype);
        dot = parity_round_compute(dot + parity_round_compute(g[i] * x_hat, dtype), dtype);
    }
    double mean_dot = parity_round_compute(dot / (double)hidden, dtype);
    for (int64_t i = 0; i < hidden; i++) {
        double x_hat = parity_round_compute(row[i] * inverse, dtype);
        double inner = parity_round_compute(g[i] - parity_round_compute(x_hat * mean_dot, dtype), dtype);
        dx[i] = parity_round_compute(inverse * inner, dtype);
    }
}
