// split.c: argument validation shared by every split backend.
#include "ops/split/split.h"

#include <stdio.h>

#include "ops/core/cpu_math.h"

parity_error *parity_split_check(const parity_split_args *args, int64_t *rows) {
    const parity_tensor *input = args->input;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "split: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE, "split: input is %s, expected a float dtype",
                 parity_dtype_name(input->dtype));
    int64_t width, input_width = input->shape[input->ndim - 1];
    PARITY_TRY(parity_concat_check_parts("split", "parts", (const parity_tensor *const *)args->parts, args->count, input,
                                         &width));
    PARITY_CHECK(width == input_width, PARITY_ERROR_SHAPE,
                 "split: the parts' last dimensions sum to %lld, expected %lld (input's last dimension)", (long long)width,
                 (long long)input_width);
    *rows = input_width ? input->numel / input_width : 0;
    return NULL;
}

parity_error *parity_split_check_grads(const parity_split_args *args, const parity_split_grads *grads) {
    const parity_tensor *input = args->input;
    for (int i = 0; i < args->count; i++) {
        if (!grads->dparts[i]) continue;
        char name[48];
        snprintf(name, sizeof name, "dparts[%d]", i);
        PARITY_TRY(parity_check_tensor("split", name, grads->dparts[i], input->dtype, args->parts[i]->ndim,
                                       args->parts[i]->shape));
    }
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("split", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    return NULL;
}
