// blas.h: the one GEMM every GPU backend uses, over cuBLAS, row-major like the CPU's cpu_gemm.h:
//   C[i] = alpha op(A[i]) op(B[i]) + beta C[i]      for i < batch (strided-batched)
// A is (M, K), or (K, M) when transpose_a; B is (K, N), or (N, K) when transpose_b; C is (M, N).
// Precision by dtype (A, B and C share it):
//   f64   cublasDgemm / cublasDgemmStridedBatched (pure f64)
//   f32   cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F, default math: plain f32, never TF32
//   bf16  cublasGemmStridedBatchedEx, bf16 inputs, CUBLAS_COMPUTE_32F accumulation, C stored bf16
//         (beta C joins the f32 accumulation; one rounding at the end, as PyTorch's addmm)
// Reduced-precision split-K reductions are disallowed, so bf16 sums really are f32 sums.
// The product runs on an execution context (ops/core/exec.h): its cuBLAS handle, created on its first
// GEMM and bound to its stream. Every cuBLAS status is checked and becomes a DEVICE error naming the
// call and the cuBLAS status string.
// C-compatible: callable from .c and .cu code; pointers are device pointers on the context's device.
#ifndef PARITY_CUDA_BLAS_H
#define PARITY_CUDA_BLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/core/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_cuda_gemm_desc {
    parity_dtype dtype;                 // PARITY_F64, PARITY_F32 or PARITY_BF16
    int64_t batch, m, n, k;             // batch >= 1 products of (M, K) x (K, N)
    bool transpose_a, transpose_b;
    const void *a;                      // (batch, M, K) or (batch, K, M)
    const void *b;                      // (batch, K, N) or (batch, N, K)
    void *c;                            // (batch, M, N)
    int64_t lda, ldb, ldc;              // row strides in elements (0 = packed: the stored row length)
    int64_t stride_a, stride_b, stride_c; // elements between consecutive products (0 with batch 1, or a
                                        // shared operand for stride_a / stride_b)
    double alpha, beta;                 // f32/bf16 use them as f32
} parity_cuda_gemm_desc;

// A packed product: contiguous operands one after the other, alpha = 1, beta = 0 (C overwritten).
parity_cuda_gemm_desc parity_cuda_gemm_packed(parity_dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                                              bool transpose_a, bool transpose_b, const void *a, const void *b,
                                              void *c);

// Queues the product on exec's stream (a CUDA context) and returns (asynchronous, like a kernel).
// K = 0 gives C = beta C (beta 0 or 1). SHAPE error for negative sizes, sizes beyond cuBLAS's int
// range, or leading dimensions shorter than a row; USAGE error for another dtype or a context that is
// not on a CUDA device; DEVICE error (with cuBLAS's status string) when cuBLAS fails.
parity_error *parity_cuda_gemm(const parity_exec *exec, const parity_cuda_gemm_desc *desc);

// A cuBLAS handle (cublasHandle_t) on `device_index` with parity's math mode (no TF32, no reduced-
// precision split-K reductions), bound to `stream` (a cudaStream_t): what an execution context
// (ops/core/exec.h) creates on its first GEMM and destroys with itself.
parity_error *parity_cuda_blas_create(int device_index, void *stream, void **out);
void parity_cuda_blas_destroy(int device_index, void *handle);

#ifdef __cplusplus
}
#endif
#endif
