// rms_statistics.h: the RMSNorm row math every CPU eager norm shares (rms_norm, rms_norm_gated),
// in the compute precision of `dtype` (f64 for f64, f32 arithmetic otherwise), summed in order:
//   inverse = rsqrt(mean(x^2) + eps)
//   dx      = inverse * (g - x_hat * mean(g * x_hat)),  x_hat = x * inverse, g = dloss / dx_hat
// Each norm decides how its output and g are formed from x_hat (weight, offset, gate).
#ifndef PARITY_RMS_STATISTICS_H
#define PARITY_RMS_STATISTICS_H

#include <stdint.h>

#include "ops/core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

double parity_rms_inverse(const double *row, int64_t hidden, double eps, parity_dtype dtype);
// Writes dx (hidden values, compute precision) from the row, g and the forward's inverse.
void parity_rms_input_gradient(const double *row, const double *g, int64_t hidden, double inverse, parity_dtype dtype,
                               double *dx);

#ifdef __cplusplus
}
#endif
#endif
