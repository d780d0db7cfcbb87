// causal_conv1d.c: argument validation shared by every causal_conv1d backend.
#include "ops/causal_conv1d/causal_conv1d.h"

#include "ops/core/cpu_math.h"
#include "ops/core/cu_seqlens.h"

parity_error *parity_causal_conv1d_check(const parity_causal_conv1d_args *args, int64_t *tokens, int64_t *channels,
                                         int64_t *kernel_size) {
    const parity_tensor *input = args->input;
    char shape[160];
    PARITY_CHECK(input, PARITY_ERROR_SHAPE, "causal_conv1d: input is missing");
    PARITY_CHECK(input->ndim == 2, PARITY_ERROR_SHAPE, "causal_conv1d: input has shape %s, expected (N, C)",
                 parity_tensor_shape_string(input, shape, sizeof shape));
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE,
                 "causal_conv1d: input is %s, expected a float dtype", parity_dtype_name(input->dtype));
    *tokens = input->shape[0];
    *channels = input->shape[1];
    PARITY_CHECK(*channels > 0, PARITY_ERROR_SHAPE, "causal_conv1d: input has 0 channels");
    PARITY_CHECK(args->weight, PARITY_ERROR_SHAPE, "causal_conv1d: weight is missing");
    PARITY_TRY(parity_check_tensor("causal_conv1d", "weight", args->weight, input->dtype, 2,
                                   (int64_t[]){*channels, PARITY_ANY}));
    *kernel_size = args->weight->shape[1];
    PARITY_CHECK(*kernel_size >= 1, PARITY_ERROR_SHAPE, "causal_conv1d: weight has kernel size 0, expected >= 1");
    PARITY_CHECK(args->activation == PARITY_CAUSAL_CONV1D_NONE || args->activation == PARITY_CAUSAL_CONV1D_SILU,
                 PARITY_ERROR_SHAPE, "causal_conv1d: unknown activation %d", (int)args->activation);
    PARITY_TRY(parity_cu_seqlens_check("causal_conv1d", args->cu_seqlens));
    PARITY_TRY(parity_check_tensor("causal_conv1d", "output", args->output, input->dtype, 2, input->shape));
    return NULL;
}

parity_error *parity_causal_conv1d_check_grads(const parity_causal_conv1d_args *args,
                                               const parity_causal_conv1d_grads *grads) {
    const parity_tensor *input = args->input;
    PARITY_TRY(parity_check_tensor("causal_conv1d", "doutput", grads->doutput, input->dtype, 2, input->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("causal_conv1d", "dinput", grads->dinput, input->dtype, 2, input->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("causal_conv1d", "dweight", grads->dweight, input->dtype, 2, args->weight->shape));
    return NULL;
}
