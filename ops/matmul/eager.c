// eager.c: the reference batched matmul on the CPU (value "eager"), as torch.matmul computes it:
// one GEMM per batch entry, f32 accumulation for f32 and bf16, the result rounded once.
//   C = op(A) op(B)                  op = identity or transpose (transpose_a, transpose_b)
// Backward (saves nothing), each gradient one GEMM rounded once, written for A's and B's storage layout:
//   dA = dC op(B)^T   (M, K)  or, when A is stored transposed,  dA = op(B) dC^T   (K, M)
//   dB = op(A)^T dC   (K, N)  or, when B is stored transposed,  dB = dC^T op(A)   (N, K)
#include "ops/core/cpu_gemm.h"
#include "ops/core/cpu_math.h"
#include "ops/matmul/matmul.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *matmul_eager_forward(const parity_exec *exec, const parity_matmul_args *args,
                                          parity_saved *saved) {
    parity_matmul_sizes sizes;
    PARITY_TRY(parity_matmul_check(args, &sizes));
    PARITY_TRY(parity_check_cpu("matmul", "a", args->a));

    parity_cpu_values a = {0}, b = {0}, c = {0};
    parity_error *error = parity_cpu_values_load(args->a, "matmul a", &a);
    if (!error) error = parity_cpu_values_load(args->b, "matmul b", &b);
    if (!error) error = parity_cpu_values_new(sizes.batch * sizes.m * sizes.n, &c);
    parity_cpu_gemm_shape shape = {sizes.batch, sizes.m, sizes.n, sizes.k, args->transpose_a, args->transpose_b};
    if (!error) error = parity_cpu_gemm(args->a->dtype, shape, a.data, b.data, false, c.data);
    if (!error) parity_cpu_values_store(args->output, c.data);
    parity_cpu_values_free(&a);
    parity_cpu_values_free(&b);
    parity_cpu_values_free(&c);
    return error;
}

// dA: (M, K) = dC (M, N) x op(B)^T (N, K), or (K, M) = op(B) (K, N) x dC^T (N, M) when A is transposed.
static parity_error *gradient_of_a(const parity_matmul_args *args, parity_matmul_sizes sizes, const double *b,
                                   const double *dc, double *da) {
    if (!args->transpose_a) {
        parity_cpu_gemm_shape shape = {sizes.batch, sizes.m, sizes.k, sizes.n, false, !args->transpose_b};
        return parity_cpu_gemm(args->a->dtype, shape, dc, b, false, da);
    }
    parity_cpu_gemm_shape shape = {sizes.batch, sizes.k, sizes.m, sizes.n, args->transpose_b, true};
    return parity_cpu_gemm(args->a->dtype, shape, b, dc, false, da);
}

// dB: (K, N) = op(A)^T (K, M) x dC (M, N), or (N, K) = dC^T (N, M) x op(A) (M, K) when B is transposed.
static parity_error *gradient_of_b(const parity_matmul_args *args, parity_matmul_sizes sizes, const double *a,
                                   const double *dc, double *db) {
    if (!args->transpose_b) {
        parity_cpu_gemm_shape shape = {sizes.batch, sizes.k, sizes.n, sizes.m, !args->transpose_a, false};
        return parity_cpu_gemm(args->a->dtype, shape, a, dc, false, db);
    }
    parity_cpu_gemm_shape shape = {sizes.batch, sizes.n, sizes.k, sizes.m, true, args->transpose_a};
    return parity_cpu_gemm(args->a->dtype, shape, dc, a, false, db);
}

static parity_error *matmul_eager_backward(const parity_exec *exec, const parity_matmul_args *args,
                                           const parity_saved *saved, const parity_matmul_grads *grads) {
    parity_matmul_sizes sizes;
    PARITY_TRY(parity_matmul_check(args, &sizes));
    PARITY_TRY(parity_matmul_check_grads(args, grads));

    parity_cpu_values a = {0}, b = {0}, dc = {0}, da = {0}, db = {0};
    parity_error *error = parity_cpu_values_load(args->a, "matmul a", &a);
    if (!error) error = parity_cpu_values_load(args->b, "matmul b", &b);
    if (!error) error = parity_cpu_values_load(grads->doutput, "matmul doutput", &dc);
    if (!error) error = parity_cpu_values_new(args->a->numel, &da);
    if (!error) error = parity_cpu_values_new(args->b->numel, &db);
    if (!error && grads->da) {
        error = gradient_of_a(args, sizes, b.data, dc.data, da.data);
        if (!error) parity_cpu_values_store(grads->da, da.data);
    }
    if (!error && grads->db) {
        error = gradient_of_b(args, sizes, a.data, dc.data, db.data);
        if (!error) parity_cpu_values_store(grads->db, db.data);
    }
    parity_cpu_values_free(&a);
    parity_cpu_values_free(&b);
    parity_cpu_values_free(&dc);
    parity_cpu_values_free(&da);
    parity_cpu_values_free(&db);
    return error;
}

static const parity_matmul_kernels matmul_eager_kernels = {matmul_eager_forward, matmul_eager_backward};

PARITY_BACKEND_REGISTRATION(matmul, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_MATMUL,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC,
        .kernels = &matmul_eager_kernels,
        .description = "reference batched matmul with transposes through CBLAS, f64/f32/bf16",
    });
}
