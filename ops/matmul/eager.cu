// eager.cu: batched matmul on the GPU (value "eager" on cuda), as torch.matmul: one strided-batched
// cuBLAS GEMM (ops/core/cuda/blas.h), f32 accumulation for f32 and bf16, the result rounded once.
//   C = op(A) op(B)
// Backward (saves nothing), each gradient one batched GEMM written for A's and B's storage layout:
//   dA = dC op(B)^T   (M, K)  or, when A is stored transposed,  dA = op(B) dC^T   (K, M)
//   dB = op(A)^T dC   (K, N)  or, when B is stored transposed,  dB = dC^T op(A)   (N, K)
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/device_args.h"
#include "ops/matmul/matmul.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

// One batched product (batch, m, n, k) of packed operands.
static parity_error *batched_gemm(const parity_exec *exec, const parity_tensor *like, parity_matmul_sizes sizes,
                                  int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b, const void *a,
                                  const void *b, void *c, const char *what) {
    if (sizes.batch == 0 || m == 0 || n == 0) return NULL;
    parity_cuda_gemm_desc gemm = parity_cuda_gemm_packed(like->dtype, sizes.batch, m, n, k, transpose_a, transpose_b, a, b, c);
    PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &gemm), "matmul %s", what);
    return NULL;
}

static parity_error *check_devices(const parity_matmul_args *args) {
    parity_device device = args->a->device;
    PARITY_TRY(parity_cuda_check_tensor("matmul", "a", args->a, device));
    PARITY_TRY(parity_cuda_check_tensor("matmul", "b", args->b, device));
    PARITY_TRY(parity_cuda_check_tensor("matmul", "output", args->output, device));
    return use_device(device);
}

static parity_error *matmul_cuda_forward(const parity_exec *exec, const parity_matmul_args *args, parity_saved *saved) {
    parity_matmul_sizes sizes;
    PARITY_TRY(parity_matmul_check(args, &sizes));
    PARITY_TRY(check_devices(args));
    return batched_gemm(exec, args->a, sizes, sizes.m, sizes.n, sizes.k, args->transpose_a, args->transpose_b,
                        args->a->data, args->b->data, args->output->data, "forward");
}

static parity_error *matmul_cuda_backward(const parity_exec *exec, const parity_matmul_args *args,
                                          const parity_saved *saved, const parity_matmul_grads *grads) {
    parity_matmul_sizes sizes;
    PARITY_TRY(parity_matmul_check(args, &sizes));
    PARITY_TRY(parity_matmul_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->a->device;
    PARITY_TRY(parity_cuda_check_tensor("matmul", "doutput", grads->doutput, device));
    PARITY_TRY(parity_cuda_check_tensor("matmul", "da", grads->da, device));
    PARITY_TRY(parity_cuda_check_tensor("matmul", "db", grads->db, device));
    const void *a = args->a->data, *b = args->b->data, *dc = grads->doutput->data;
    if (grads->da) {
        if (!args->transpose_a)
            PARITY_TRY(batched_gemm(exec, args->a, sizes, sizes.m, sizes.k, sizes.n, false, !args->transpose_b, dc, b,
                                    grads->da->data, "backward: da"));
        else
            PARITY_TRY(batched_gemm(exec, args->a, sizes, sizes.k, sizes.m, sizes.n, args->transpose_b, true, b, dc,
                                    grads->da->data, "backward: da"));
    }
    if (grads->db) {
        if (!args->transpose_b)
            PARITY_TRY(batched_gemm(exec, args->a, sizes, sizes.k, sizes.n, sizes.m, !args->transpose_a, false, a, dc,
                                    grads->db->data, "backward: db"));
        else
            PARITY_TRY(batched_gemm(exec, args->a, sizes, sizes.n, sizes.k, sizes.m, true, args->transpose_a, dc, a,
                                    grads->db->data, "backward: db"));
    }
    return NULL;
}

static const parity_matmul_kernels matmul_cuda_kernels = {matmul_cuda_forward, matmul_cuda_backward};

PARITY_BACKEND_REGISTRATION(matmul, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_MATMUL;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &matmul_cuda_kernels;
    backend.description = "batched matmul with transposes through cuBLAS (bf16 with f32 accumulation), f64/f32/bf16";
    return parity_registry_add(&backend);
}
