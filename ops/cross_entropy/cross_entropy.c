// cross_entropy.c: argument validation shared by every cross-entropy backend.
#include "ops/cross_entropy/cross_entropy.h"

#include <stdlib.h>

#include "ops/core/cpu_math.h"

parity_error *parity_cross_entropy_check(const parity_cross_entropy_args *args, int64_t *tokens, int64_t *hidden,
                                         int64_t *vocab) {
    const parity_tensor *input = args->hidden;
    PARITY_CHECK(input && input->ndim == 2, PARITY_ERROR_SHAPE, "cross_entropy: hidden must be (N, H), has %d dimensions",
                 input ? input->ndim : 0);
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE, "cross_entropy: hidden is %s, expected a float dtype",
                 parity_dtype_name(input->dtype));
    *tokens = input->shape[0];
    *hidden = input->shape[1];
    PARITY_CHECK(*tokens > 0, PARITY_ERROR_SHAPE, "cross_entropy: hidden has no tokens (N = 0)");
    PARITY_CHECK(*hidden > 0, PARITY_ERROR_SHAPE, "cross_entropy: hidden size is 0");
    PARITY_TRY(parity_check_tensor("cross_entropy", "weight", args->weight, input->dtype, 2,
                                   (int64_t[]){PARITY_ANY, *hidden}));
    *vocab = args->weight->shape[0];
    PARITY_CHECK(*vocab > 0, PARITY_ERROR_SHAPE, "cross_entropy: weight has an empty vocabulary (V = 0)");
    PARITY_TRY(parity_check_tensor("cross_entropy", "targets", args->targets, PARITY_I64, 1, (int64_t[]){*tokens}));
    PARITY_CHECK(args->num_items_in_batch >= 0, PARITY_ERROR_SHAPE, "cross_entropy: num_items_in_batch %lld is negative",
                 (long long)args->num_items_in_batch);
    PARITY_CHECK(args->chunk_size >= 0, PARITY_ERROR_SHAPE, "cross_entropy: chunk_size %lld is negative",
                 (long long)args->chunk_size);
    PARITY_TRY(parity_check_tensor("cross_entropy", "loss", args->loss, parity_compute_dtype(input->dtype), 0, NULL));
    if (args->logits)
        PARITY_TRY(parity_check_tensor("cross_entropy", "logits", args->logits, input->dtype, 2,
                                       (int64_t[]){*tokens, *vocab}));
    return NULL;
}

parity_error *parity_cross_entropy_check_grads(const parity_cross_entropy_args *args,
                                               const parity_cross_entropy_grads *grads) {
    PARITY_TRY(parity_check_tensor("cross_entropy", "dloss", grads->dloss, args->loss->dtype, 0, NULL));
    if (grads->dhidden)
        PARITY_TRY(parity_check_tensor("cross_entropy", "dhidden", grads->dhidden, args->hidden->dtype, 2, args->hidden->shape));
    if (grads->dweight)
        PARITY_TRY(parity_check_tensor("cross_entropy", "dweight", grads->dweight, args->weight->dtype, 2, args->weight->shape));
    return NULL;
}

parity_error *parity_cross_entropy_load_targets(const parity_cross_entropy_args *args, int64_t vocab,
                                                int64_t **targets, int64_t *valid_count) {
    PARITY_TRY(parity_check_cpu("cross_entropy", "targets", args->targets));
    PARITY_TRY(parity_cpu_indices_load(args->targets, "cross_entropy targets", targets));
    *valid_count = 0;
    for (int64_t i = 0; i < args->targets->numel; i++) {
        int64_t target = (*targets)[i];
        if (target == args->ignore_index) continue;
        if (target < 0 || target >= vocab) {
            free(*targets);
            *targets = NULL;
            return PARITY_ERROR(PARITY_ERROR_SHAPE,
                                "cross_entropy: target at position %lld is %lld, outside the vocabulary [0, %lld) and not "
                                "ignore_index %lld",
                                (long long)i, (long long)target, (long long)vocab, (long long)args->ignore_index);
        }
        (*valid_count)++;
    }
    return NULL;
}
