// eager.c: the reference l2_norm on the CPU (value "eager"), HF's l2norm applied to a tensor of the
// call's dtype: y = x * rsqrt(sum(x * x) + eps). PyTorch runs it op by op without upcasting, so in
// bf16 every intermediate tensor (x * x, the sum, + eps, rsqrt) is rounded to bf16; f32 and f64 keep
// their own precision. The row math (shared with the gated delta rule) is in l2_norm_math.c.
// Saves the inverse norms (N) as the forward stored them, in the call's dtype.
#include "ops/core/cpu_math.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/l2_norm/l2_norm_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *l2_norm_eager_forward(const parity_exec *exec, const parity_l2_norm_args *args,
                                           parity_saved *saved) {
    int64_t rows, dim;
    PARITY_TRY(parity_l2_norm_check(args, &rows, &dim));
    PARITY_TRY(parity_check_cpu("l2_norm", "input", args->input));
    PARITY_TRY(parity_check_cpu("l2_norm", "output", args->output));
    parity_dtype dtype = args->input->dtype;
    parity_tensor *inverse_norms;
    PARITY_TRY(parity_saved_alloc(saved, &inverse_norms, dtype, PARITY_CPU, PARITY_SHAPE(rows)));

    parity_cpu_values x = {0}, y = {0};
    parity_error *error = parity_cpu_values_load(args->input, "l2_norm input", &x);
    if (!error) error = parity_cpu_values_new(rows * dim, &y);
    if (!error) {
        for (int64_t row = 0; row < rows; row++) {
            double inverse = parity_l2_norm_row_forward(x.data + row * dim, dim, args->eps, dtype, y.data + row * dim);
            parity_tensor_set(inverse_norms, row, inverse);
        }
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *l2_norm_eager_backward(const parity_exec *exec, const parity_l2_norm_args *args,
                                            const parity_saved *saved, const parity_l2_norm_grads *grads) {
    int64_t rows, dim;
    PARITY_TRY(parity_l2_norm_check(args, &rows, &dim));
    PARITY_TRY(parity_l2_norm_check_grads(args, grads));
    const parity_tensor *inverse_norms;
    PARITY_TRY(parity_saved_get(saved, 0, &inverse_norms));
    if (!grads->dinput) return NULL;
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x = {0}, dy = {0}, dx = {0};
    parity_error *error = parity_cpu_values_load(args->input, "l2_norm input", &x);
    if (!error) error = parity_cpu_values_load(grads->doutput, "l2_norm doutput", &dy);
    if (!error) error = parity_cpu_values_new(rows * dim, &dx);
    if (!error) {
        for (int64_t row = 0; row < rows; row++)
            parity_l2_norm_row_backward(x.data + row * dim, dy.data + row * dim, dim,
                                        parity_tensor_get(inverse_norms, row), dtype, dx.data + row * dim);
        parity_cpu_values_store(grads->dinput, dx.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    return error;
}

static const parity_l2_norm_kernels l2_norm_eager_kernels = {l2_norm_eager_forward, l2_norm_eager_backward};

PARITY_BACKEND_REGISTRATION(l2_norm, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_L2_NORM,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &l2_norm_eager_kernels,
        .description = "reference L2 normalisation over the last dimension (HF l2norm), f64/f32/bf16",
    });
}
