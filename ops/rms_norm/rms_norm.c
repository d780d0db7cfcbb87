// rms_norm.c: argument validation shared by every RMSNorm backend.
#include "ops/rms_norm/rms_norm.h"

#include "ops/core/cpu_math.h"

parity_error *parity_rms_norm_check(const parity_rms_norm_args *args, int64_t *rows, int64_t *hidden) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "rms_norm: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE, "rms_norm: input is %s, expected a float dtype",
                 parity_dtype_name(input->dtype));
    *hidden = input->shape[input->ndim - 1];
    *rows = *hidden ? input->numel / *hidden : 0;
    PARITY_CHECK(*hidden > 0, PARITY_ERROR_SHAPE, "rms_norm: hidden size is 0");
    PARITY_CHECK(args->eps >= 0, PARITY_ERROR_SHAPE, "rms_norm: eps %g is negative", args->eps);
    PARITY_CHECK(args->variant == PARITY_RMS_NORM_STANDARD || args->variant == PARITY_RMS_NORM_OFFSET, PARITY_ERROR_SHAPE,
                 "rms_norm: unknown variant %d", (int)args->variant);
    PARITY_TRY(parity_check_tensor("rms_norm", "weight", args->weight, input->dtype, 1, (int64_t[]){*hidden}));
    PARITY_TRY(parity_check_tensor("rms_norm", "output", args->output, input->dtype, input->ndim, input->shape));
    return NULL;
}

parity_error *parity_rms_norm_check_grads(const parity_rms_norm_args *args, const parity_rms_norm_grads *grads) {
    const parity_tensor *input = args->input;
    PARITY_TRY(parity_check_tensor("rms_norm", "doutput", grads->doutput, input->dtype, input->ndim, input->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("rms_norm", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("rms_norm", "dweight", grads->dweight, input->dtype, 1, args->weight->shape));
    return NULL;
}
