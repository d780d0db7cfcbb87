// cpu_gemm.h: the one matrix multiply of the CPU kernels (linear, matmul, attention through its
// strided-operand view ops/attention/matmul.h, cross_entropy, moe_experts), on the f64 value arrays
// of cpu_math.h, in the compute precision of the run's storage dtype:
//   f64        -> cblas_dgemm (pure f64)
//   f32, bf16  -> cblas_sgemm on f32 copies (f32 products and accumulation, as cuBLAS does for
//                 bf16 with CUBLAS_COMPUTE_32F); results come back as exact f32 values and the
//                 caller rounds them once to the storage dtype.
// Row-major operands: A is (M, K), or (K, M) when transpose_a; B is (K, N), or (N, K) when
// transpose_b; C is (M, N). Rows are contiguous unless a row stride is given (a head of a
// token-major (N, H, D) array: stride H * D). With accumulate, C holds an addend on entry (beta = 1:
// the bias of addmm, added inside the same f32 accumulation); otherwise C is overwritten (beta = 0).
#ifndef PARITY_CPU_GEMM_H
#define PARITY_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_cpu_gemm_shape {
    int64_t batch;    // independent products; operands of consecutive products follow each other
    int64_t m, n, k;
    bool transpose_a, transpose_b;
} parity_cpu_gemm_shape;

// Elements between consecutive rows of A, B and C as stored; 0 = the stored row length
// (contiguous). Product i's operands start i * (stored rows * stride) elements on.
typedef struct parity_cpu_gemm_strides {
    int64_t a, b, c;
} parity_cpu_gemm_strides;

// C[i] = op(A[i]) op(B[i]) (+ C[i] when accumulate) for i < batch, rounded to the compute precision of `dtype`.
parity_error *parity_cpu_gemm(parity_dtype dtype, parity_cpu_gemm_shape shape, const double *a, const double *b,
                              bool accumulate, double *c);
// The same on operands with row strides.
parity_error *parity_cpu_gemm_strided(parity_dtype dtype, parity_cpu_gemm_shape shape, parity_cpu_gemm_strides strides,
                                      const double *a, const double *b, bool accumulate, double *c);

#ifdef __cplusplus
}
#endif
#endif
