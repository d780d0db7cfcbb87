// eager.c: the reference residual add on the CPU (value "eager"), as PyTorch computes a + b:
//   y = a + b          in the compute precision (f32 for bf16), rounded once to the storage dtype
// Backward (saves nothing): da = db = dy, exact copies.
#include "ops/add/add.h"
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *add_eager_forward(const parity_exec *exec, const parity_add_args *args, parity_saved *saved) {
    PARITY_TRY(parity_add_check(args));
    PARITY_TRY(parity_check_cpu("add", "a", args->a));
    parity_dtype dtype = args->a->dtype;

    parity_cpu_values a = {0}, b = {0}, y = {0};
    parity_error *error = parity_cpu_values_load(args->a, "add a", &a);
    if (!error) error = parity_cpu_values_load(args->b, "add b", &b);
    if (!error) error = parity_cpu_values_new(args->a->numel, &y);
    if (!error) {
        for (int64_t i = 0; i < args->a->numel; i++) y.data[i] = parity_round_compute(a.data[i] + b.data[i], dtype);
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values_free(&a);
    parity_cpu_values_free(&b);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *add_eager_backward(const parity_exec *exec, const parity_add_args *args, const parity_saved *saved,
                                        const parity_add_grads *grads) {
    PARITY_TRY(parity_add_check(args));
    PARITY_TRY(parity_add_check_grads(args, grads));
    parity_cpu_values dy = {0};
    PARITY_TRY(parity_cpu_values_load(grads->doutput, "add doutput", &dy));
    if (grads->da) parity_cpu_values_store(grads->da, dy.data);
    if (grads->db) parity_cpu_values_store(grads->db, dy.data);
    parity_cpu_values_free(&dy);
    return NULL;
}

static const parity_add_kernels add_eager_kernels = {add_eager_forward, add_eager_backward};

PARITY_BACKEND_REGISTRATION(add, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ADD,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &add_eager_kernels,
        .description = "reference residual add y = a + b, f64/f32/bf16",
    });
}
