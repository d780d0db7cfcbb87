// add.c: argument validation shared by every add backend.
#include "ops/add/add.h"

#include "ops/core/cpu_math.h"

parity_error *parity_add_check(const parity_add_args *args) {
    const parity_tensor *a = args->a;
    PARITY_CHECK(a, PARITY_ERROR_SHAPE, "add: a is missing");
    PARITY_CHECK(parity_dtype_is_float(a->dtype), PARITY_ERROR_SHAPE, "add: a is %s, expected a float dtype",
                 parity_dtype_name(a->dtype));
    PARITY_TRY(parity_check_tensor("add", "b", args->b, a->dtype, a->ndim, a->shape));
    PARITY_TRY(parity_check_tensor("add", "output", args->output, a->dtype, a->ndim, a->shape));
    return NULL;
}

parity_error *parity_add_check_grads(const parity_add_args *args, const parity_add_grads *grads) {
    const parity_tensor *a = args->a;
    PARITY_TRY(parity_check_tensor("add", "doutput", grads->doutput, a->dtype, a->ndim, a->shape));
    if (grads->da) PARITY_TRY(parity_check_tensor("add", "da", grads->da, a->dtype, a->ndim, a->shape));
    if (grads->db) PARITY_TRY(parity_check_tensor("add", "db", grads->db, a->dtype, a->ndim, a->shape));
    return NULL;
}
