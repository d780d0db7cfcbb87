// matmul.h: the CPU attention backends' view of the one CPU GEMM (ops/core/cpu_gemm.h): C = op(A) @
// op(B) on f64 arrays at the run's precision (f64: cblas_dgemm; f32 and bf16: cblas_sgemm on f32
// copies, so C holds what an f32-accumulating GEMM returns), with each operand described as stored,
// a strided sub-matrix (a head of a token-major (N, H, D) array has leading dimension H * D).
// Callers round C to bf16 exactly where the GPU path stores a bf16 tensor.
#ifndef PARITY_ATTENTION_MATMUL_H
#define PARITY_ATTENTION_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"

// One GEMM operand: `rows` x `cols` as stored (row-major, `stride` elements between rows); used
// transposed when `transposed` is set.
typedef struct parity_attention_operand {
    const double *data;
    int64_t rows, cols, stride;
    bool transposed;
} parity_attention_operand;

// c (m x n, row stride `c_stride`) = op(a) @ op(b), overwritten. Sizes must agree.
parity_error *parity_attention_matmul(parity_dtype dtype, parity_attention_operand a, parity_attention_operand b,
                                      double *c, int64_t c_stride);

#endif
