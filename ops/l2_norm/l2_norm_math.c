// l2_norm_math.c: the row math behind l2_norm_math.h.
#include "ops/l2_norm/l2_norm_math.h"

#include <math.h>

#include "ops/core/cpu_math.h"

// One elementwise PyTorch op: computed in the compute precision, stored in `dtype`.
static double stored(double value, parity_dtype dtype) {
    return parity_round_storage(parity_round_compute(value, dtype), dtype);
}

double parity_l2_norm_row_forward(const double *x, int64_t dim, double eps, parity_dtype dtype, double *y) {
    double sum = 0; // a reduction accumulates in the compute precision, then stores once
    for (int64_t i = 0; i < dim; i++) sum = parity_round_compute(sum + stored(x[i] * x[i], dtype), dtype);
    sum = stored(sum, dtype);
    double shifted = stored(sum + parity_round_compute(eps, dtype), dtype); // a Python scalar enters as opmath
    double inverse_norm = stored(1.0 / sqrt(shifted), dtype);
    for (int64_t i = 0; i < dim; i++) y[i] = stored(x[i] * inverse_norm, dtype);
    return inverse_norm;
}

void parity_l2_norm_row_backward(const double *x, const double *dy, int64_t dim, double inverse_norm,
                                 parity_dtype dtype, double *dx) {
    double dinverse = 0; // mul backward for the broadcast factor: sum_to_size(dy * x)
    for (int64_t i = 0; i < dim; i++) dinverse = parity_round_compute(dinverse + stored(dy[i] * x[i], dtype), dtype);
    dinverse = stored(dinverse, dtype);
    // rsqrt backward: -0.5 * grad * result.pow(3)
    double cube = stored(parity_round_compute(inverse_norm * inverse_norm, dtype) * inverse_norm, dtype);
    double dsum = stored(stored(-0.5 * dinverse, dtype) * cube, dtype); // + eps and sum pass it through
    for (int64_t i = 0; i < dim; i++) {
        double through_product = stored(dy[i] * inverse_norm, dtype);
        double through_square = stored(2.0 * stored(dsum * x[i], dtype), dtype); // x * x: both operands
        dx[i] = stored(through_product + through_square, dtype);
    }
}
