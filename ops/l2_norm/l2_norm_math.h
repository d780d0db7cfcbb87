// l2_norm_math.h: HF l2norm on one row, forward and backward, as plain f64 arrays. Shared by the
// l2_norm op and the gated delta rule (which normalises q and k in f32 inside its kernel).
//
// `dtype` is the dtype of the tensors PyTorch materialises along the way (x * x, the sum, + eps,
// rsqrt, the product): each is computed in the compute precision of `dtype` and rounded to `dtype`
// (f64: exact; f32: f32; bf16: f32 arithmetic, every intermediate rounded to bf16).
//   forward:  s = sum(x * x); r = rsqrt(s + eps); y = x * r
//   backward (autograd's graph): dr = sum(dy * x); dt = (-0.5 * dr) * r^3;
//             dx = dy * r + 2 * (dt * x)        [= r * (dy - y * sum(dy * y))]
#ifndef PARITY_L2_NORM_MATH_H
#define PARITY_L2_NORM_MATH_H

#include <stdint.h>

#include "ops/core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

// Writes y (dim) and returns the inverse norm r as stored (what backward needs).
double parity_l2_norm_row_forward(const double *x, int64_t dim, double eps, parity_dtype dtype, double *y);
// Writes dx (dim) from x, dy and the r returned by forward. dx may alias dy.
void parity_l2_norm_row_backward(const double *x, const double *dy, int64_t dim, double inverse_norm,
                                 parity_dtype dtype, double *dx);

#ifdef __cplusplus
}
#endif
#endif
