// eager.c: the reference head broadcast on the CPU (value "eager"), as torch expand + contiguous:
//   y[n, h, :] = x[n, 0, :]                 exact copies in every dtype
// Backward (saves nothing), as autograd's sum_to_size: dx[n, 0, :] = sum over h of dy[n, h, :],
// accumulated in the compute precision (f32 for bf16) and rounded once to the storage dtype.
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *broadcast_heads_eager_forward(const parity_exec *exec, const parity_broadcast_heads_args *args,
                                                   parity_saved *saved) {
    int64_t rows, heads, head_dim;
    PARITY_TRY(parity_broadcast_heads_check(args, &rows, &heads, &head_dim));
    PARITY_TRY(parity_check_cpu("broadcast_heads", "input", args->input));

    parity_cpu_values x = {0}, y = {0};
    parity_error *error = parity_cpu_values_load(args->input, "broadcast_heads input", &x);
    if (!error) error = parity_cpu_values_new(rows * heads * head_dim, &y);
    if (!error) {
        for (int64_t row = 0; row < rows; row++)
            for (int64_t head = 0; head < heads; head++)
                for (int64_t i = 0; i < head_dim; i++)
                    y.data[(row * heads + head) * head_dim + i] = x.data[row * head_dim + i];
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *broadcast_heads_eager_backward(const parity_exec *exec, const parity_broadcast_heads_args *args,
                                                    const parity_saved *saved,
                                                    const parity_broadcast_heads_grads *grads) {
    int64_t rows, heads, head_dim;
    PARITY_TRY(parity_broadcast_heads_check(args, &rows, &heads, &head_dim));
    PARITY_TRY(parity_broadcast_heads_check_grads(args, grads));
    if (!grads->dinput) return NULL;
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values dy = {0}, dx = {0};
    parity_error *error = parity_cpu_values_load(grads->doutput, "broadcast_heads doutput", &dy);
    if (!error) error = parity_cpu_values_new(rows * head_dim, &dx);
    if (!error) {
        for (int64_t row = 0; row < rows; row++)
            for (int64_t head = 0; head < heads; head++)
                for (int64_t i = 0; i < head_dim; i++) {
                    double *sum = &dx.data[row * head_dim + i];
                    *sum = parity_round_compute(*sum + dy.data[(row * heads + head) * head_dim + i], dtype);
                }
        parity_cpu_values_store(grads->dinput, dx.data);
    }
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    return error;
}

static const parity_broadcast_heads_kernels broadcast_heads_eager_kernels = {broadcast_heads_eager_forward,
                                                                             broadcast_heads_eager_backward};

PARITY_BACKEND_REGISTRATION(broadcast_heads, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_BROADCAST_HEADS,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &broadcast_heads_eager_kernels,
        .description = "reference broadcast of one head to H heads (MLA k_pe), f64/f32/bf16",
    });
}
