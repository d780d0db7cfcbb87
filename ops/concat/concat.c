// concat.c: argument validation shared by every concat backend, and the parts check split uses too.
#include "ops/concat/concat.h"

#include <stdio.h>

#include "ops/core/cpu_math.h"

parity_error *parity_concat_check_parts(const char *op, const char *parts_name, const parity_tensor *const *parts,
                                        int count, const parity_tensor *reference, int64_t *total_width) {
    PARITY_CHECK(count >= 2 && count <= PARITY_CONCAT_MAX_PARTS, PARITY_ERROR_SHAPE, "%s: %d parts given, expected 2 to %d",
                 op, count, PARITY_CONCAT_MAX_PARTS);
    int ndim = reference->ndim;
    int64_t part_shape[PARITY_MAX_DIMS];
    for (int dim = 0; dim < ndim - 1; dim++) part_shape[dim] = reference->shape[dim];
    part_shape[ndim - 1] = PARITY_ANY;
    *total_width = 0;
    for (int i = 0; i < count; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s[%d]", parts_name, i);
        PARITY_TRY(parity_check_tensor(op, name, parts[i], reference->dtype, ndim, part_shape));
        *total_width += parts[i]->shape[ndim - 1];
    }
    return NULL;
}

parity_error *parity_concat_check(const parity_concat_args *args, int64_t *rows) {
    const parity_tensor *first = args->parts[0];
    PARITY_CHECK(first && first->ndim >= 1, PARITY_ERROR_SHAPE, "concat: parts[0] must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(first->dtype), PARITY_ERROR_SHAPE, "concat: parts[0] is %s, expected a float dtype",
                 parity_dtype_name(first->dtype));
    int64_t width;
    PARITY_TRY(parity_concat_check_parts("concat", "parts", args->parts, args->count, first, &width));
    int ndim = first->ndim;
    int64_t output_shape[PARITY_MAX_DIMS];
    for (int dim = 0; dim < ndim - 1; dim++) output_shape[dim] = first->shape[dim];
    output_shape[ndim - 1] = width;
    PARITY_TRY(parity_check_tensor("concat", "output", args->output, first->dtype, ndim, output_shape));
    *rows = width ? args->output->numel / width : 0;
    return NULL;
}

parity_error *parity_concat_check_grads(const parity_concat_args *args, const parity_concat_grads *grads) {
    const parity_tensor *output = args->output;
    PARITY_TRY(parity_check_tensor("concat", "doutput", grads->doutput, output->dtype, output->ndim, output->shape));
    for (int i = 0; i < args->count; i++) {
        if (!grads->dparts[i]) continue;
        char name[48];
        snprintf(name, sizeof name, "dparts[%d]", i);
        PARITY_TRY(parity_check_tensor("concat", name, grads->dparts[i], output->dtype, args->parts[i]->ndim,
                                       args->parts[i]->shape));
    }
    return NULL;
}
