// gdn_gating.c: argument validation shared by every gdn_gating backend.
#include "ops/gdn_gating/gdn_gating.h"

#include "ops/core/cpu_math.h"

parity_error *parity_gdn_gating_check(const parity_gdn_gating_args *args, int64_t *tokens, int64_t *heads) {
    const parity_tensor *a = args->a;
    char shape[160];
    PARITY_CHECK(a, PARITY_ERROR_SHAPE, "gdn_gating: a is missing");
    PARITY_CHECK(a->ndim == 2, PARITY_ERROR_SHAPE, "gdn_gating: a has shape %s, expected (N, Hv)",
                 parity_tensor_shape_string(a, shape, sizeof shape));
    PARITY_CHECK(parity_dtype_is_float(a->dtype), PARITY_ERROR_SHAPE, "gdn_gating: a is %s, expected a float dtype",
                 parity_dtype_name(a->dtype));
    *tokens = a->shape[0];
    *heads = a->shape[1];
    PARITY_CHECK(*heads > 0, PARITY_ERROR_SHAPE, "gdn_gating: a has 0 heads");
    parity_dtype dtype = a->dtype;
    PARITY_TRY(parity_check_tensor("gdn_gating", "b", args->b, dtype, 2, a->shape));
    PARITY_TRY(parity_check_tensor("gdn_gating", "A_log", args->A_log, dtype, 1, (int64_t[]){*heads}));
    PARITY_TRY(parity_check_tensor("gdn_gating", "dt_bias", args->dt_bias, dtype, 1, (int64_t[]){*heads}));
    PARITY_TRY(parity_check_tensor("gdn_gating", "g", args->g, parity_compute_dtype(dtype), 2, a->shape));
    PARITY_TRY(parity_check_tensor("gdn_gating", "beta", args->beta, dtype, 2, a->shape));
    return NULL;
}

parity_error *parity_gdn_gating_check_grads(const parity_gdn_gating_args *args, const parity_gdn_gating_grads *grads) {
    const parity_tensor *a = args->a;
    parity_dtype dtype = a->dtype;
    PARITY_TRY(parity_check_tensor("gdn_gating", "dg", grads->dg, parity_compute_dtype(dtype), 2, a->shape));
    PARITY_TRY(parity_check_tensor("gdn_gating", "dbeta", grads->dbeta, dtype, 2, a->shape));
    if (grads->da) PARITY_TRY(parity_check_tensor("gdn_gating", "da", grads->da, dtype, 2, a->shape));
    if (grads->db) PARITY_TRY(parity_check_tensor("gdn_gating", "db", grads->db, dtype, 2, a->shape));
    if (grads->dA_log) PARITY_TRY(parity_check_tensor("gdn_gating", "dA_log", grads->dA_log, dtype, 1, args->A_log->shape));
    if (grads->ddt_bias)
        PARITY_TRY(parity_check_tensor("gdn_gating", "ddt_bias", grads->ddt_bias, dtype, 1, args->dt_bias->shape));
    return NULL;
}
