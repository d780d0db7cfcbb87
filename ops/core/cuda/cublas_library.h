// cublas_library.h: cuBLAS loaded on first use (dlopen) instead of at program start. Linking
// libcublas/libcublasLt makes every start of `parity` map ~0.7 GB of libraries (about a second);
// most commands never touch a GPU. The table holds the few entry points parity calls, with the
// signatures of cublas_v2.h. For .cu files only.
#ifndef PARITY_CUBLAS_LIBRARY_H
#define PARITY_CUBLAS_LIBRARY_H

#include <cublas_v2.h>

#include "ops/core/error.h"

struct parity_cublas_library {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
    const char *(*status_string)(cublasStatus_t);
    const char *(*status_name)(cublasStatus_t);
    cublasStatus_t (*dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double *,
                            const double *, int, const double *, int, const double *, double *, int);
    cublasStatus_t (*dgemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const double *, const double *, int, long long, const double *, int, long long,
                                            const double *, double *, int, long long, int);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                              const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                              cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                              const void *, const void *, cudaDataType, int, long long, const void *,
                                              cudaDataType, int, long long, const void *, void *, cudaDataType, int,
                                              long long, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// The loaded table, or an UNAVAILABLE error naming the library and dlerror()'s reason.
parity_error *parity_cublas_library_get(const parity_cublas_library **out);

#endif
