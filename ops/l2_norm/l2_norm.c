// l2_norm.c: argument validation shared by every l2_norm backend.
#include "ops/l2_norm/l2_norm.h"

#include "ops/core/cpu_math.h"

parity_error *parity_l2_norm_check(const parity_l2_norm_args *args, int64_t *rows, int64_t *dim) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "l2_norm: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE, "l2_norm: input is %s, expected a float dtype",
                 parity_dtype_name(input->dtype));
    *dim = input->shape[input->ndim - 1];
    PARITY_CHECK(*dim > 0, PARITY_ERROR_SHAPE, "l2_norm: last dimension is 0");
    *rows = input->numel / *dim;
    PARITY_CHECK(args->eps >= 0, PARITY_ERROR_SHAPE, "l2_norm: eps %g is negative", args->eps);
    PARITY_TRY(parity_check_tensor("l2_norm", "output", args->output, input->dtype, input->ndim, input->shape));
    return NULL;
}

parity_error *parity_l2_norm_check_grads(const parity_l2_norm_args *args, const parity_l2_norm_grads *grads) {
    const parity_tensor *input = args->input;
    PARITY_TRY(parity_check_tensor("l2_norm", "doutput", grads->doutput, input->dtype, input->ndim, input->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("l2_norm", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    return NULL;
}
