// gated_delta_rule.c: argument validation shared by every gated_delta_rule backend.
#include "ops/gated_delta_rule/gated_delta_rule.h"

#include <math.h>

#include "ops/core/cpu_math.h"
#include "ops/core/cu_seqlens.h"

parity_error *parity_gated_delta_rule_check(const parity_gated_delta_rule_args *args,
                                            parity_gated_delta_rule_sizes *sizes) {
    const parity_tensor *query = args->query;
    char shape[160];
    PARITY_CHECK(query, PARITY_ERROR_SHAPE, "gated_delta_rule: query is missing");
    PARITY_CHECK(query->ndim == 3, PARITY_ERROR_SHAPE, "gated_delta_rule: query has shape %s, expected (N, Hk, Dk)",
                 parity_tensor_shape_string(query, shape, sizeof shape));
    PARITY_CHECK(parity_dtype_is_float(query->dtype), PARITY_ERROR_SHAPE,
                 "gated_delta_rule: query is %s, expected a float dtype", parity_dtype_name(query->dtype));
    parity_dtype dtype = query->dtype;
    int64_t tokens = query->shape[0], key_heads = query->shape[1], key_dim = query->shape[2];
    PARITY_CHECK(key_heads > 0 && key_dim > 0, PARITY_ERROR_SHAPE,
                 "gated_delta_rule: query has shape %s, expected at least one head of at least one dimension",
                 parity_tensor_shape_string(query, shape, sizeof shape));
    PARITY_TRY(parity_check_tensor("gated_delta_rule", "key", args->key, dtype, 3, query->shape));
    PARITY_CHECK(args->value, PARITY_ERROR_SHAPE, "gated_delta_rule: value is missing");
    PARITY_TRY(parity_check_tensor("gated_delta_rule", "value", args->value, dtype, 3,
                                   (int64_t[]){tokens, PARITY_ANY, PARITY_ANY}));
    int64_t value_heads = args->value->shape[1], value_dim = args->value->shape[2];
    PARITY_CHECK(value_heads > 0 && value_dim > 0, PARITY_ERROR_SHAPE,
                 "gated_delta_rule: value has shape %s, expected at least one head of at least one dimension",
                 parity_tensor_shape_string(args->value, shape, sizeof shape));
    PARITY_CHECK(value_heads % key_heads == 0, PARITY_ERROR_SHAPE,
                 "gated_delta_rule: %lld key heads do not divide %lld value heads", (long long)key_heads,
                 (long long)value_heads);
    PARITY_CHECK(args->g, PARITY_ERROR_SHAPE, "gated_delta_rule: g is missing");
    parity_dtype g_dtype = args->g->dtype == parity_compute_dtype(dtype) ? args->g->dtype : dtype;
    PARITY_TRY(parity_check_tensor("gated_delta_rule", "g", args->g, g_dtype, 2, (int64_t[]){tokens, value_heads}));
    PARITY_TRY(parity_check_tensor("gated_delta_rule", "beta", args->beta, dtype, 2, (int64_t[]){tokens, value_heads}));
    PARITY_TRY(parity_cu_seqlens_check("gated_delta_rule", args->cu_seqlens));
    PARITY_CHECK(args->scale >= 0 && isfinite(args->scale), PARITY_ERROR_SHAPE,
                 "gated_delta_rule: scale %g must be finite and >= 0 (0 selects Dk^-0.5)", args->scale);
    PARITY_CHECK(args->chunk_size >= 0, PARITY_ERROR_SHAPE, "gated_delta_rule: chunk_size %lld must be >= 0 (0 selects %d)",
                 (long long)args->chunk_size, PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK);
    PARITY_TRY(parity_check_tensor("gated_delta_rule", "output", args->output, dtype, 3, args->value->shape));
    *sizes = (parity_gated_delta_rule_sizes){tokens, key_heads, value_heads, key_dim, value_dim,
                                             args->scale > 0 ? args->scale : 1.0 / sqrt((double)key_dim),
                                             args->chunk_size > 0 ? args->chunk_size : PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK};
    return NULL;
}

parity_error *parity_gated_delta_rule_check_grads(const parity_gated_delta_rule_args *args,
                                                  const parity_gated_delta_rule_grads *grads) {
    parity_dtype dtype = args->query->dtype;
    const char *op = "gated_delta_rule";
    PARITY_TRY(parity_check_tensor(op, "doutput", grads->doutput, dtype, 3, args->value->shape));
    if (grads->dquery) PARITY_TRY(parity_check_tensor(op, "dquery", grads->dquery, dtype, 3, args->query->shape));
    if (grads->dkey) PARITY_TRY(parity_check_tensor(op, "dkey", grads->dkey, dtype, 3, args->key->shape));
    if (grads->dvalue) PARITY_TRY(parity_check_tensor(op, "dvalue", grads->dvalue, dtype, 3, args->value->shape));
    if (grads->dg) PARITY_TRY(parity_check_tensor(op, "dg", grads->dg, args->g->dtype, 2, args->g->shape));
    if (grads->dbeta) PARITY_TRY(parity_check_tensor(op, "dbeta", grads->dbeta, dtype, 2, args->beta->shape));
    return NULL;
}
