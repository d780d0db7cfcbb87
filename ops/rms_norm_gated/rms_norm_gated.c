// rms_norm_gated.c: argument validation shared by every gated RMSNorm backend.
#include "ops/rms_norm_gated/rms_norm_gated.h"

#include "ops/core/cpu_math.h"

parity_error *parity_rms_norm_gated_check(const parity_rms_norm_gated_args *args, int64_t *rows, int64_t *hidden) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "rms_norm_gated: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE,
                 "rms_norm_gated: input is %s, expected a float dtype", parity_dtype_name(input->dtype));
    *hidden = input->shape[input->ndim - 1];
    *rows = *hidden ? input->numel / *hidden : 0;
    PARITY_CHECK(*hidden > 0, PARITY_ERROR_SHAPE, "rms_norm_gated: hidden size is 0");
    PARITY_CHECK(args->eps >= 0, PARITY_ERROR_SHAPE, "rms_norm_gated: eps %g is negative", args->eps);
    PARITY_TRY(parity_check_tensor("rms_norm_gated", "gate", args->gate, input->dtype, input->ndim, input->shape));
    PARITY_TRY(parity_check_tensor("rms_norm_gated", "weight", args->weight, input->dtype, 1, (int64_t[]){*hidden}));
    PARITY_TRY(parity_check_tensor("rms_norm_gated", "output", args->output, input->dtype, input->ndim, input->shape));
    return NULL;
}

parity_error *parity_rms_norm_gated_check_grads(const parity_rms_norm_gated_args *args,
                                                const parity_rms_norm_gated_grads *grads) {
    const parity_tensor *input = args->input;
    PARITY_TRY(parity_check_tensor("rms_norm_gated", "doutput", grads->doutput, input->dtype, input->ndim, input->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("rms_norm_gated", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    if (grads->dgate)
        PARITY_TRY(parity_check_tensor("rms_norm_gated", "dgate", grads->dgate, input->dtype, input->ndim, input->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("rms_norm_gated", "dweight", grads->dweight, input->dtype, 1, args->weight->shape));
    return NULL;
}
