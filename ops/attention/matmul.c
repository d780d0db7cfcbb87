// matmul.c: the attention backends' GEMM view (matmul.h) over parity_cpu_gemm.
#include "ops/attention/matmul.h"

#include "ops/core/cpu_gemm.h"

parity_error *parity_attention_matmul(parity_dtype dtype, parity_attention_operand a, parity_attention_operand b,
                                      double *c, int64_t c_stride) {
    int64_t m = a.transposed ? a.cols : a.rows, k = a.transposed ? a.rows : a.cols;
    int64_t n = b.transposed ? b.rows : b.cols, k_b = b.transposed ? b.cols : b.rows;
    if (k != k_b)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "attention matmul: inner sizes %lld and %lld differ", (long long)k,
                            (long long)k_b);
    parity_cpu_gemm_shape shape = {.batch = 1, .m = m, .n = n, .k = k, .transpose_a = a.transposed, .transpose_b = b.transposed};
    parity_cpu_gemm_strides strides = {a.stride, b.stride, c_stride};
    return parity_cpu_gemm_strided(dtype, shape, strides, a.data, b.data, false, c);
}
