// eager.c: the reference concatenation on the CPU (value "eager"), as torch.cat(dim=-1):
//   y[n, offset_i + j] = part_i[n, j]       exact copies in every dtype
// Backward (saves nothing): dpart_i = the columns of dy at offset_i, exact copies.
#include "ops/concat/concat.h"
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *concat_eager_forward(const parity_exec *exec, const parity_concat_args *args,
                                          parity_saved *saved) {
    int64_t rows;
    PARITY_TRY(parity_concat_check(args, &rows));
    PARITY_TRY(parity_check_cpu("concat", "output", args->output));
    const parity_tensor *output = args->output;
    int64_t width = output->shape[output->ndim - 1];

    parity_cpu_values y = {0};
    parity_error *error = parity_cpu_values_new(output->numel, &y);
    int64_t offset = 0;
    for (int i = 0; i < args->count && !error; i++) {
        parity_cpu_values part = {0};
        error = parity_cpu_values_load(args->parts[i], "concat part", &part);
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        for (int64_t row = 0; row < rows && !error; row++)
            for (int64_t j = 0; j < part_width; j++) y.data[row * width + offset + j] = part.data[row * part_width + j];
        offset += part_width;
        parity_cpu_values_free(&part);
    }
    if (!error) parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *concat_eager_backward(const parity_exec *exec, const parity_concat_args *args,
                                           const parity_saved *saved, const parity_concat_grads *grads) {
    int64_t rows;
    PARITY_TRY(parity_concat_check(args, &rows));
    PARITY_TRY(parity_concat_check_grads(args, grads));
    const parity_tensor *output = args->output;
    int64_t width = output->shape[output->ndim - 1];

    parity_cpu_values dy = {0};
    parity_error *error = parity_cpu_values_load(grads->doutput, "concat doutput", &dy);
    int64_t offset = 0;
    for (int i = 0; i < args->count && !error; i++) {
        int64_t part_width = args->parts[i]->shape[args->parts[i]->ndim - 1];
        if (grads->dparts[i]) {
            parity_cpu_values dpart = {0};
            error = parity_cpu_values_new(rows * part_width, &dpart);
            for (int64_t row = 0; row < rows && !error; row++)
                for (int64_t j = 0; j < part_width; j++) dpart.data[row * part_width + j] = dy.data[row * width + offset + j];
            if (!error) parity_cpu_values_store(grads->dparts[i], dpart.data);
            parity_cpu_values_free(&dpart);
        }
        offset += part_width;
    }
    parity_cpu_values_free(&dy);
    return error;
}

static const parity_concat_kernels concat_eager_kernels = {concat_eager_forward, concat_eager_backward};

PARITY_BACKEND_REGISTRATION(concat, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_CONCAT,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &concat_eager_kernels,
        .description = "reference concatenation along the last dimension, f64/f32/bf16",
    });
}
