// eager.c: the reference split on the CPU (value "eager"), as torch.split(dim=-1) (views there,
// copies here):
//   part_i[n, j] = x[n, offset_i + j]       exact copies in every dtype
// Backward (saves nothing): dx = dpart_0 ++ dpart_1 ++ ... along the last dimension (zeros where a
// part has no gradient), exact copies.
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/split/split.h"

static parity_error *split_eager_forward(const parity_exec *exec, const parity_split_args *args, parity_saved *saved) {
    int64_t rows;
    PARITY_TRY(parity_split_check(args, &rows));
    PARITY_TRY(parity_check_cpu("split", "input", args->input));
    int64_t width = args->input->shape[args->input->ndim - 1];

    parity_cpu_values x = {0};
    parity_error *error = parity_cpu_values_load(args->input, "split input", &x);
    int64_t offset = 0;
    for (int i = 0; i < args->count && !error; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        parity_cpu_values part = {0};
        error = parity_cpu_values_new(rows * part_width, &part);
        for (int64_t row = 0; row < rows && !error; row++)
            for (int64_t j = 0; j < part_width; j++) part.data[row * part_width + j] = x.data[row * width + offset + j];
        if (!error) parity_cpu_values_store(args->parts[i], part.data);
        parity_cpu_values_free(&part);
        offset += part_width;
    }
    parity_cpu_values_free(&x);
    return error;
}

static parity_error *split_eager_backward(const parity_exec *exec, const parity_split_args *args,
                                          const parity_saved *saved, const parity_split_grads *grads) {
    int64_t rows;
    PARITY_TRY(parity_split_check(args, &rows));
    PARITY_TRY(parity_split_check_grads(args, grads));
    if (!grads->dinput) return NULL;
    int64_t width = args->input->shape[args->input->ndim - 1];

    parity_cpu_values dx = {0};
    parity_error *error = parity_cpu_values_new(args->input->numel, &dx);
    int64_t offset = 0;
    for (int i = 0; i < args->count && !error; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        if (grads->dparts[i]) {
            parity_cpu_values dpart = {0};
            error = parity_cpu_values_load(grads->dparts[i], "split dpart", &dpart);
            for (int64_t row = 0; row < rows && !error; row++)
                for (int64_t j = 0; j < part_width; j++) dx.data[row * width + offset + j] = dpart.data[row * part_width + j];
            parity_cpu_values_free(&dpart);
        }
        offset += part_width;
    }
    if (!error) parity_cpu_values_store(grads->dinput, dx.data);
    parity_cpu_values_free(&dx);
    return error;
}

static const parity_split_kernels split_eager_kernels = {split_eager_forward, split_eager_backward};

PARITY_BACKEND_REGISTRATION(split, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_SPLIT,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &split_eager_kernels,
        .description = "reference split along the last dimension, f64/f32/bf16",
    });
}
