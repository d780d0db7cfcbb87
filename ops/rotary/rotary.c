// rotary.c: argument validation shared by every rotary backend.
#include "ops/rotary/rotary.h"

#include "ops/core/cpu_math.h"

parity_error *parity_rotary_check(const parity_rotary_args *args, parity_rotary_sizes *sizes) {
    const parity_tensor *query = args->query;
    PARITY_CHECK(query && query->ndim == 3, PARITY_ERROR_SHAPE, "rotary: query must have shape (N, Hq, D)");
    PARITY_CHECK(parity_dtype_is_float(query->dtype), PARITY_ERROR_SHAPE, "rotary: query is %s, expected a float dtype",
                 parity_dtype_name(query->dtype));
    PARITY_CHECK(args->rope, PARITY_ERROR_SHAPE, "rotary: rope description is missing");
    sizes->tokens = query->shape[0];
    sizes->query_heads = query->shape[1];
    sizes->head_dim = query->shape[2];
    PARITY_TRY(parity_rope_rotary_dim(args->rope, sizes->head_dim, &sizes->rotary_dim));
    PARITY_CHECK(args->rope->layout == PARITY_ROTARY_HALF_SPLIT || args->rope->layout == PARITY_ROTARY_INTERLEAVED,
                 PARITY_ERROR_SHAPE, "rotary: unknown layout %d", (int)args->rope->layout);
    PARITY_TRY(parity_check_tensor("rotary", "key", args->key, query->dtype, 3,
                                   (int64_t[]){sizes->tokens, PARITY_ANY, sizes->head_dim}));
    sizes->key_heads = args->key->shape[1];
    PARITY_TRY(parity_check_tensor("rotary", "positions", args->positions, PARITY_I64, 1, (int64_t[]){sizes->tokens}));
    PARITY_TRY(parity_check_tensor("rotary", "query_out", args->query_out, query->dtype, 3, query->shape));
    PARITY_TRY(parity_check_tensor("rotary", "key_out", args->key_out, query->dtype, 3, args->key->shape));
    return NULL;
}

parity_error *parity_rotary_check_grads(const parity_rotary_args *args, const parity_rotary_grads *grads) {
    const parity_tensor *query = args->query, *key = args->key;
    PARITY_TRY(parity_check_tensor("rotary", "dquery_out", grads->dquery_out, query->dtype, 3, query->shape));
    PARITY_TRY(parity_check_tensor("rotary", "dkey_out", grads->dkey_out, query->dtype, 3, key->shape));
    if (grads->dquery) PARITY_TRY(parity_check_tensor("rotary", "dquery", grads->dquery, query->dtype, 3, query->shape));
    if (grads->dkey) PARITY_TRY(parity_check_tensor("rotary", "dkey", grads->dkey, query->dtype, 3, key->shape));
    return NULL;
}
