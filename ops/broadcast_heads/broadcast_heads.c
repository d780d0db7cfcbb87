// broadcast_heads.c: argument validation shared by every broadcast_heads backend.
#include "ops/broadcast_heads/broadcast_heads.h"

#include "ops/core/cpu_math.h"

parity_error *parity_broadcast_heads_check(const parity_broadcast_heads_args *args, int64_t *rows, int64_t *heads,
                                           int64_t *head_dim) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 2, PARITY_ERROR_SHAPE, "broadcast_heads: input must be (N, 1, D)");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE,
                 "broadcast_heads: input is %s, expected a float dtype", parity_dtype_name(input->dtype));
    int ndim = input->ndim;
    int64_t shape[PARITY_MAX_DIMS];
    for (int dim = 0; dim < ndim; dim++) shape[dim] = input->shape[dim];
    shape[ndim - 2] = 1;
    PARITY_TRY(parity_check_tensor("broadcast_heads", "input", input, input->dtype, ndim, shape));
    shape[ndim - 2] = PARITY_ANY;
    PARITY_TRY(parity_check_tensor("broadcast_heads", "output", args->output, input->dtype, ndim, shape));
    *heads = args->output->shape[ndim - 2];
    *head_dim = input->shape[ndim - 1];
    *rows = *head_dim ? input->numel / *head_dim : 0;
    return NULL;
}

parity_error *parity_broadcast_heads_check_grads(const parity_broadcast_heads_args *args,
                                                 const parity_broadcast_heads_grads *grads) {
    const parity_tensor *input = args->input, *output = args->output;
    PARITY_TRY(parity_check_tensor("broadcast_heads", "doutput", grads->doutput, input->dtype, output->ndim, output->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("broadcast_heads", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    return NULL;
}
