// eager.c: the reference linear layer on the CPU (value "eager"), as PyTorch computes F.linear:
//   y = x W^T + b      one GEMM (cuBLAS addmm, beta = 1): the bias joins the f32 accumulation and the
//                      result is rounded once to the storage dtype
// Backward (saves nothing; x and W are in the args):
//   dx = dy W          (N, out) x (out, in)
//   dW = dy^T x        (out, N) x (N, in)
//   db = sum over rows of dy, accumulated in the compute precision, rounded once
// GEMMs go through parity_cpu_gemm: dgemm in f64, sgemm on f32 copies for f32 and bf16.
#include "ops/core/cpu_gemm.h"
#include "ops/core/cpu_math.h"
#include "ops/linear/linear.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *linear_eager_forward(const parity_exec *exec, const parity_linear_args *args,
                                          parity_saved *saved) {
    int64_t rows, in_features, out_features;
    PARITY_TRY(parity_linear_check(args, &rows, &in_features, &out_features));
    PARITY_TRY(parity_check_cpu("linear", "input", args->input));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x = {0}, w = {0}, y = {0};
    parity_error *error = parity_cpu_values_load(args->input, "linear input", &x);
    if (!error) error = parity_cpu_values_load(args->weight, "linear weight", &w);
    if (!error) error = parity_cpu_values_new(rows * out_features, &y);
    if (!error && args->bias)
        for (int64_t row = 0; row < rows; row++)
            for (int64_t j = 0; j < out_features; j++) y.data[row * out_features + j] = parity_tensor_get(args->bias, j);
    parity_cpu_gemm_shape shape = {.batch = 1, .m = rows, .n = out_features, .k = in_features, .transpose_b = true};
    if (!error) error = parity_cpu_gemm(dtype, shape, x.data, w.data, args->bias != NULL, y.data);
    if (!error) parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *linear_eager_backward(const parity_exec *exec, const parity_linear_args *args,
                                           const parity_saved *saved, const parity_linear_grads *grads) {
    int64_t rows, in_features, out_features;
    PARITY_TRY(parity_linear_check(args, &rows, &in_features, &out_features));
    PARITY_TRY(parity_linear_check_grads(args, grads));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x = {0}, w = {0}, dy = {0}, dx = {0}, dw = {0}, db = {0};
    parity_error *error = parity_cpu_values_load(args->input, "linear input", &x);
    if (!error) error = parity_cpu_values_load(args->weight, "linear weight", &w);
    if (!error) error = parity_cpu_values_load(grads->doutput, "linear doutput", &dy);
    if (!error) error = parity_cpu_values_new(rows * in_features, &dx);
    if (!error) error = parity_cpu_values_new(out_features * in_features, &dw);
    if (!error) error = parity_cpu_values_new(out_features, &db);
    if (!error && grads->dinput) {
        parity_cpu_gemm_shape shape = {.batch = 1, .m = rows, .n = in_features, .k = out_features};
        error = parity_cpu_gemm(dtype, shape, dy.data, w.data, false, dx.data);
        if (!error) parity_cpu_values_store(grads->dinput, dx.data);
    }
    if (!error && grads->dweight) {
        parity_cpu_gemm_shape shape = {.batch = 1, .m = out_features, .n = in_features, .k = rows, .transpose_a = true};
        error = parity_cpu_gemm(dtype, shape, dy.data, x.data, false, dw.data);
        if (!error) parity_cpu_values_store(grads->dweight, dw.data);
    }
    if (!error && grads->dbias) {
        for (int64_t row = 0; row < rows; row++)
            for (int64_t j = 0; j < out_features; j++)
                db.data[j] = parity_round_compute(db.data[j] + dy.data[row * out_features + j], dtype);
        parity_cpu_values_store(grads->dbias, db.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&w);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dw);
    parity_cpu_values_free(&db);
    return error;
}

static const parity_linear_kernels linear_eager_kernels = {linear_eager_forward, linear_eager_backward};

PARITY_BACKEND_REGISTRATION(linear, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_LINEAR,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC,
        .kernels = &linear_eager_kernels,
        .description = "reference linear layer y = x W^T + b through CBLAS, f64/f32/bf16",
    });
}
