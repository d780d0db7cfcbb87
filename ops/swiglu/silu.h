// silu.h: SiLU and its derivative with PyTorch's CUDA rounding, shared by every CPU eager op that
// applies silu (swiglu, rms_norm_gated). For f32 and bf16 the math runs in f32 step by step, as
// ATen's kernels do in their f32 "opmath" type:
//   silu(x)         = x / (1 + exp(-x))
//   silu_backward   = dy * s * (1 + x * (1 - s)),  s = 1 / (1 + exp(-x))
// nvcc contracts 1 + x * (1 - s) into one fma, so that step rounds once. The caller rounds the
// result to its storage dtype. Checked against PyTorch 2.11 on an H200: bf16 bit-exact; f32 off by
// a few ulps where CUDA's expf is not correctly rounded (exp is correctly rounded here). f64 is
// pure f64.
#ifndef PARITY_SILU_H
#define PARITY_SILU_H

#include <math.h>

#include "ops/core/cpu_math.h"

static inline double parity_silu(double x, parity_dtype dtype) {
    double e = parity_round_compute(exp(-x), dtype);
    return parity_round_compute(x / parity_round_compute(1.0 + e, dtype), dtype);
}

// d silu(x) / dx times dy, in the compute precision of `dtype`.
static inline double parity_silu_backward(double dy, double x, parity_dtype dtype) {
    double e = parity_round_compute(exp(-x), dtype);
    double s = parity_round_compute(1.0 / parity_round_compute(1.0 + e, dtype), dtype);
    double slope = parity_round_compute(fma(x, parity_round_compute(1.0 - s, dtype), 1.0), dtype);
    return parity_round_compute(parity_round_compute(dy * s, dtype) * slope, dtype);
}

#endif
