// attention.c: argument validation shared by every attention backend, and the CPU registration of
// the family (eager.c and sdpa.c each register one backend).
#include "ops/attention/attention.h"

#include <math.h>
#include <stdlib.h>

#include "ops/core/cpu_math.h"

parity_error *parity_attention_check(const parity_attention_args *args, parity_attention_dims *dims) {
    const parity_tensor *query = args->query;
    PARITY_CHECK(query, PARITY_ERROR_SHAPE, "attention: query is missing");
    PARITY_CHECK(query->ndim == 3, PARITY_ERROR_SHAPE, "attention: query has %d dimensions, expected 3 (N, Hq, D)",
                 query->ndim);
    PARITY_CHECK(parity_dtype_is_float(query->dtype), PARITY_ERROR_SHAPE,
                 "attention: query is %s, expected a float dtype", parity_dtype_name(query->dtype));
    parity_dtype dtype = query->dtype;
    dims->tokens = query->shape[0];
    dims->query_heads = query->shape[1];
    dims->head_dim = query->shape[2];
    PARITY_CHECK(dims->query_heads > 0 && dims->head_dim > 0, PARITY_ERROR_SHAPE,
                 "attention: query has %lld heads of size %lld, expected both > 0", (long long)dims->query_heads,
                 (long long)dims->head_dim);
    PARITY_TRY(parity_check_tensor("attention", "key", args->key, dtype, 3,
                                   (int64_t[]){dims->tokens, PARITY_ANY, dims->head_dim}));
    dims->kv_heads = args->key->shape[1];
    PARITY_CHECK(dims->kv_heads > 0 && dims->query_heads % dims->kv_heads == 0, PARITY_ERROR_SHAPE,
                 "attention: %lld query heads is not a multiple of %lld kv heads", (long long)dims->query_heads,
                 (long long)dims->kv_heads);
    PARITY_TRY(parity_check_tensor("attention", "value", args->value, dtype, 3,
                                   (int64_t[]){dims->tokens, dims->kv_heads, PARITY_ANY}));
    dims->value_dim = args->value->shape[2];
    PARITY_CHECK(dims->value_dim > 0, PARITY_ERROR_SHAPE, "attention: value head size is 0");
    PARITY_TRY(parity_check_tensor("attention", "output", args->output, dtype, 3,
                                   (int64_t[]){dims->tokens, dims->query_heads, dims->value_dim}));
    PARITY_TRY(
        parity_check_tensor("attention", "cu_seqlens", args->cu_seqlens, PARITY_I64, 1, (int64_t[]){PARITY_ANY}));
    PARITY_CHECK(args->cu_seqlens->numel >= 1, PARITY_ERROR_SHAPE, "attention: cu_seqlens is empty, expected (S + 1)");
    dims->documents = args->cu_seqlens->numel - 1;
    PARITY_CHECK(isfinite(args->scale), PARITY_ERROR_SHAPE, "attention: scale %g is not finite", args->scale);
    PARITY_CHECK(args->sliding_window >= 0, PARITY_ERROR_SHAPE, "attention: sliding_window %lld is negative",
                 (long long)args->sliding_window);
    PARITY_CHECK(args->sliding_window == 0 || args->causal, PARITY_ERROR_SHAPE,
                 "attention: sliding_window %lld needs causal attention (HF sliding windows are causal)",
                 (long long)args->sliding_window);
    return NULL;
}

parity_error *parity_attention_check_grads(const parity_attention_args *args, const parity_attention_grads *grads) {
    parity_dtype dtype = args->query->dtype;
    PARITY_TRY(parity_check_tensor("attention", "doutput", grads->doutput, dtype, 3, args->output->shape));
    if (grads->dquery)
        PARITY_TRY(parity_check_tensor("attention", "dquery", grads->dquery, dtype, 3, args->query->shape));
    if (grads->dkey) PARITY_TRY(parity_check_tensor("attention", "dkey", grads->dkey, dtype, 3, args->key->shape));
    if (grads->dvalue)
        PARITY_TRY(parity_check_tensor("attention", "dvalue", grads->dvalue, dtype, 3, args->value->shape));
    return NULL;
}

parity_error *parity_attention_check_boundaries(const int64_t *cu_seqlens, int64_t count, int64_t tokens) {
    PARITY_CHECK(count >= 1 && cu_seqlens[0] == 0, PARITY_ERROR_SHAPE,
                 "attention: cu_seqlens starts at %lld, expected 0", count >= 1 ? (long long)cu_seqlens[0] : -1LL);
    for (int64_t s = 1; s < count; s++)
        PARITY_CHECK(
            cu_seqlens[s] > cu_seqlens[s - 1], PARITY_ERROR_SHAPE,
            "attention: cu_seqlens must increase strictly, but cu_seqlens[%lld] = %lld <= cu_seqlens[%lld] = %lld",
            (long long)s, (long long)cu_seqlens[s], (long long)(s - 1), (long long)cu_seqlens[s - 1]);
    PARITY_CHECK(cu_seqlens[count - 1] == tokens, PARITY_ERROR_SHAPE,
                 "attention: cu_seqlens ends at %lld, expected N = %lld", (long long)cu_seqlens[count - 1],
                 (long long)tokens);
    return NULL;
}

parity_error *parity_attention_load_boundaries(const parity_attention_args *args, int64_t tokens, int64_t **out) {
    PARITY_TRY(parity_check_cpu("attention", "cu_seqlens", args->cu_seqlens));
    PARITY_TRY(parity_cpu_indices_load(args->cu_seqlens, "attention cu_seqlens", out));
    parity_error *error = parity_attention_check_boundaries(*out, args->cu_seqlens->numel, tokens);
    if (error) {
        free(*out);
        *out = NULL;
    }
    return error;
}
