// embedding.c: argument validation shared by every embedding backend.
#include "ops/embedding/embedding.h"

#include "ops/core/cpu_math.h"

parity_error *parity_embedding_check(const parity_embedding_args *args, int64_t *positions, int64_t *vocab,
                                     int64_t *hidden) {
    const parity_tensor *ids = args->ids, *weight = args->weight;
    PARITY_CHECK(ids, PARITY_ERROR_SHAPE, "embedding: ids is missing");
    PARITY_CHECK(ids->dtype == PARITY_I64, PARITY_ERROR_SHAPE, "embedding: ids is %s, expected int64",
                 parity_dtype_name(ids->dtype));
    PARITY_CHECK(ids->ndim < PARITY_MAX_DIMS, PARITY_ERROR_SHAPE, "embedding: ids has %d dimensions, at most %d allowed",
                 ids->ndim, PARITY_MAX_DIMS - 1);
    PARITY_CHECK(weight && weight->ndim == 2, PARITY_ERROR_SHAPE, "embedding: weight must be (V, H)");
    PARITY_CHECK(parity_dtype_is_float(weight->dtype), PARITY_ERROR_SHAPE,
                 "embedding: weight is %s, expected a float dtype", parity_dtype_name(weight->dtype));
    *positions = ids->numel;
    *vocab = weight->shape[0];
    *hidden = weight->shape[1];
    PARITY_CHECK(*vocab > 0 && *hidden > 0, PARITY_ERROR_SHAPE, "embedding: weight has shape (%lld, %lld), expected no empty dimension",
                 (long long)*vocab, (long long)*hidden);
    int64_t output_shape[PARITY_MAX_DIMS];
    for (int dim = 0; dim < ids->ndim; dim++) output_shape[dim] = ids->shape[dim];
    output_shape[ids->ndim] = *hidden;
    PARITY_TRY(parity_check_tensor("embedding", "output", args->output, weight->dtype, ids->ndim + 1, output_shape));
    return NULL;
}

parity_error *parity_embedding_check_grads(const parity_embedding_args *args, const parity_embedding_grads *grads) {
    const parity_tensor *weight = args->weight;
    PARITY_TRY(parity_check_tensor("embedding", "doutput", grads->doutput, weight->dtype, args->output->ndim,
                                   args->output->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("embedding", "dweight", grads->dweight, weight->dtype, 2, weight->shape));
    return NULL;
}

parity_error *parity_embedding_check_ids(const int64_t *ids, int64_t positions, int64_t vocab) {
    for (int64_t position = 0; position < positions; position++)
        PARITY_CHECK(ids[position] >= 0 && ids[position] < vocab, PARITY_ERROR_SHAPE,
                     "embedding: id %lld at position %lld is outside [0, %lld)", (long long)ids[position],
                     (long long)position, (long long)vocab);
    return NULL;
}
