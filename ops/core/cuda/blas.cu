// blas.cu: the row-major GEMM of blas.h over cuBLAS, on an execution context's handle and stream.
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets B first, with
// the transposes unchanged and the leading dimensions of the row-major storage.
#include <climits>

#include "ops/core/cuda/cublas_library.h"
#include "ops/core/cuda/cuda_check.h"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/core/cuda/blas.h"
}

namespace {

#define PARITY_CUBLAS_TRY(call)                                                                     \
    do {                                                                                            \
        cublasStatus_t parity_cublas_status_ = (call);                                              \
        if (parity_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                         \
            return PARITY_ERROR(PARITY_ERROR_DEVICE, "cuBLAS call %s failed: %s (%s)", #call,       \
                                cublas->status_string(parity_cublas_status_),                       \
                                cublas->status_name(parity_cublas_status_));                        \
    } while (0)

bool fits_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

parity_error *check_desc(const parity_cuda_gemm_desc &d, int64_t lda, int64_t ldb, int64_t ldc) {
    if (d.dtype != PARITY_F64 && d.dtype != PARITY_F32 && d.dtype != PARITY_BF16)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda gemm: dtype %s is not one of fp64, fp32, bf16",
                            parity_dtype_name(d.dtype));
    if (d.batch < 1 || !fits_int(d.batch) || !fits_int(d.m) || !fits_int(d.n) || !fits_int(d.k))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "cuda gemm: sizes batch=%lld m=%lld n=%lld k=%lld outside what cuBLAS takes",
                            (long long)d.batch, (long long)d.m, (long long)d.n, (long long)d.k);
    int64_t a_row = d.transpose_a ? d.m : d.k, b_row = d.transpose_b ? d.k : d.n;
    if (lda < a_row || ldb < b_row || ldc < d.n || !fits_int(lda) || !fits_int(ldb) || !fits_int(ldc))
        return PARITY_ERROR(PARITY_ERROR_SHAPE,
                            "cuda gemm: leading dimensions lda=%lld ldb=%lld ldc=%lld, rows need at least %lld, %lld, %lld",
                            (long long)lda, (long long)ldb, (long long)ldc, (long long)a_row, (long long)b_row,
                            (long long)d.n);
    if (d.stride_a < 0 || d.stride_b < 0 || d.stride_c < 0 || (d.batch > 1 && d.stride_c == 0))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "cuda gemm: batch strides a=%lld b=%lld c=%lld (c must be > 0 when batched)",
                            (long long)d.stride_a, (long long)d.stride_b, (long long)d.stride_c);
    return NULL;
}

} // namespace

extern "C" parity_error *parity_cuda_blas_create(int device_index, void *stream, void **out) {
    *out = nullptr;
    const parity_cublas_library *cublas;
    PARITY_TRY(parity_cublas_library_get(&cublas));
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    cublasHandle_t handle;
    PARITY_CUBLAS_TRY(cublas->create(&handle));
    // Plain precision: no TF32 for f32 and no reduced-precision split-K reductions for bf16.
    cublasStatus_t status = cublas->set_math_mode(
        handle, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    const char *call = "cublasSetMathMode";
    if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublas->set_stream(handle, (cudaStream_t)stream);
        call = "cublasSetStream";
    }
    if (status != CUBLAS_STATUS_SUCCESS) {
        cublas->destroy(handle);
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "cuBLAS call %s failed: %s (%s)", call, cublas->status_string(status),
                            cublas->status_name(status));
    }
    *out = handle;
    return NULL;
}

extern "C" void parity_cuda_blas_destroy(int device_index, void *handle) {
    const parity_cublas_library *cublas;
    parity_error *error = parity_cublas_library_get(&cublas);
    if (error) { // no handle can exist without the library
        parity_error_free(error);
        return;
    }
    cudaSetDevice(device_index);
    cublas->destroy((cublasHandle_t)handle);
}

extern "C" parity_cuda_gemm_desc parity_cuda_gemm_packed(parity_dtype dtype, int64_t batch, int64_t m, int64_t n,
                                                         int64_t k, bool transpose_a, bool transpose_b, const void *a,
                                                         const void *b, void *c) {
    parity_cuda_gemm_desc desc = {};
    desc.dtype = dtype;
    desc.batch = batch;
    desc.m = m;
    desc.n = n;
    desc.k = k;
    desc.transpose_a = transpose_a;
    desc.transpose_b = transpose_b;
    desc.a = a;
    desc.b = b;
    desc.c = c;
    desc.stride_a = m * k;
    desc.stride_b = k * n;
    desc.stride_c = m * n;
    desc.alpha = 1.0;
    desc.beta = 0.0;
    return desc;
}

extern "C" parity_error *parity_cuda_gemm(const parity_exec *exec, const parity_cuda_gemm_desc *desc) {
    const parity_cuda_gemm_desc &d = *desc;
    if (!exec || exec->device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda gemm: needs an execution context on a CUDA device");
    const int device_index = exec->device.index;
    cudaStream_t stream = parity_cuda_stream(exec);
    int64_t lda = d.lda ? d.lda : (d.transpose_a ? d.m : d.k);
    int64_t ldb = d.ldb ? d.ldb : (d.transpose_b ? d.k : d.n);
    int64_t ldc = d.ldc ? d.ldc : d.n;
    PARITY_TRY(check_desc(d, lda, ldb, ldc));
    // cuBLAS wants every leading dimension >= 1, also for an empty (K = 0) operand.
    lda = lda > 0 ? lda : 1;
    ldb = ldb > 0 ? ldb : 1;
    if (d.m == 0 || d.n == 0) return NULL;
    if (d.k == 0) { // an empty sum: C = beta C, done here rather than trusting every cuBLAS path with K = 0
        if (d.beta == 1.0) return NULL;
        if (d.beta != 0.0)
            return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "cuda gemm: K = 0 with beta %g (only 0 or 1)", d.beta);
        size_t element = parity_dtype_size(d.dtype);
        PARITY_CUDA_TRY(cudaSetDevice(device_index));
        for (int64_t i = 0; i < d.batch; i++)
            PARITY_CUDA_TRY(cudaMemset2DAsync((char *)d.c + i * d.stride_c * element, ldc * element, 0, d.n * element,
                                              d.m, stream));
        return NULL;
    }

    void *exec_handle;
    PARITY_TRY(parity_exec_blas_handle(exec, &exec_handle)); // bound to exec's stream when it was made
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    cublasHandle_t handle = (cublasHandle_t)exec_handle;
    const parity_cublas_library *cublas;
    PARITY_TRY(parity_cublas_library_get(&cublas));

    // Column-major view: (N x M) = op(B)^T (N x K) * op(A)^T (K x M).
    cublasOperation_t op_b = d.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_a = d.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)d.n, n = (int)d.m, k = (int)d.k, batch = (int)d.batch;
    if (d.dtype == PARITY_F64) {
        double alpha = d.alpha, beta = d.beta;
        if (batch == 1)
            PARITY_CUBLAS_TRY(cublas->dgemm(handle, op_b, op_a, m, n, k, &alpha, (const double *)d.b, (int)ldb,
                                          (const double *)d.a, (int)lda, &beta, (double *)d.c, (int)ldc));
        else
            PARITY_CUBLAS_TRY(cublas->dgemm_strided_batched(handle, op_b, op_a, m, n, k, &alpha, (const double *)d.b,
                                                        (int)ldb, d.stride_b, (const double *)d.a, (int)lda, d.stride_a,
                                                        &beta, (double *)d.c, (int)ldc, d.stride_c, batch));
        return NULL;
    }
    cudaDataType_t type = d.dtype == PARITY_F32 ? CUDA_R_32F : CUDA_R_16BF;
    float alpha = (float)d.alpha, beta = (float)d.beta;
    if (batch == 1)
        PARITY_CUBLAS_TRY(cublas->gemm_ex(handle, op_b, op_a, m, n, k, &alpha, d.b, type, (int)ldb, d.a, type, (int)lda,
                                       &beta, d.c, type, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        PARITY_CUBLAS_TRY(cublas->gemm_strided_batched_ex(handle, op_b, op_a, m, n, k, &alpha, d.b, type, (int)ldb,
                                                     d.stride_b, d.a, type, (int)lda, d.stride_a, &beta, d.c, type,
                                                     (int)ldc, d.stride_c, batch, CUBLAS_COMPUTE_32F,
                                                     CUBLAS_GEMM_DEFAULT));
    return NULL;
}
