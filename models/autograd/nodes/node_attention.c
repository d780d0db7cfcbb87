// node_attention.c: attention and the rotary position embedding of query and key on the tape.
// An attention backend that runs on a block mask (PARITY_CAP_BLOCK_MASK, flex_attention) gets the
// model's: built here from the visibility the model passes (cu_seqlens, causal, sliding_window) by
// the one builder (ops/attention/block_mask.h), once per distinct visibility of the tape (a model's
// full and sliding layers: two masks), on the tape's device, kept and freed by the tape. Every
// other backend gets block_mask = NULL.
#include <stdlib.h>

#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

// The tape's mask of this visibility, built on first use.
static parity_error *tape_block_mask(parity_tape *tape, const parity_tensor *cu_seqlens, int64_t tokens, bool causal,
                                     int64_t sliding_window, const parity_block_mask **out) {
    for (size_t i = 0; i < tape->block_mask_count; i++) {
        const parity_tape_block_mask *kept = tape->block_masks[i];
        if (kept->cu_seqlens == cu_seqlens->data && kept->mask.tokens == tokens && kept->mask.mask_mod.causal == causal &&
            kept->mask.mask_mod.sliding_window == sliding_window) {
            *out = &kept->mask;
            return NULL;
        }
    }
    parity_tape_block_mask **grown = realloc(tape->block_masks, (tape->block_mask_count + 1) * sizeof *grown);
    if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "growing the tape's block masks");
    tape->block_masks = grown;
    parity_tape_block_mask *kept = calloc(1, sizeof *kept);
    if (!kept) return PARITY_ERROR(PARITY_ERROR_MEMORY, "a block mask");
    parity_error *error =
        parity_block_mask_from_visibility(tape->device, cu_seqlens, tokens, causal, sliding_window, &kept->mask);
    if (error) {
        free(kept);
        return error;
    }
    kept->cu_seqlens = cu_seqlens->data;
    tape->block_masks[tape->block_mask_count++] = kept;
    *out = &kept->mask;
    return NULL;
}

parity_error *parity_node_attention(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                    parity_variable *key, parity_variable *value, const parity_tensor *cu_seqlens, double scale,
                                    bool causal, int64_t sliding_window, parity_variable **out) {
    bool needs_gradient = query->requires_gradient || key->requires_gradient || value->requires_gradient;
    PARITY_TRY(parity_tape_new_variable(tape, name, query->value.dtype,
                                        PARITY_SHAPE(query->value.shape[0], query->value.shape[1], value->value.shape[2]),
                                        needs_gradient, out));
    parity_attention_args attributes = {.scale = scale, .causal = causal, .sliding_window = sliding_window};
    if (backend->capabilities & PARITY_CAP_BLOCK_MASK)
        PARITY_TRY_CONTEXT(tape_block_mask(tape, cu_seqlens, query->value.shape[0], causal, sliding_window,
                                           &attributes.block_mask),
                           "%s: attention (%s): the model's block mask", name, backend->name);
    return parity_node_op(tape, &parity_attention_op, backend, name, &attributes,
                          (parity_node_operand[]){{query}, {key}, {value}, {.tensor = cu_seqlens}, {*out}});
}

// An output nobody used still gets a gradient for the rotary contract: the node helper passes zeros.
parity_error *parity_node_rotary(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                 parity_variable *key, const parity_tensor *positions, const parity_rope_description *rope,
                                 parity_variable **query_out, parity_variable **key_out) {
    PARITY_TRY(parity_node_output_like(tape, name, query, query->requires_gradient, query_out));
    PARITY_TRY(parity_node_output_like(tape, name, key, key->requires_gradient, key_out));
    return parity_node_op(tape, &parity_rotary_op, backend, name, rope,
                          (parity_node_operand[]){{query}, {key}, {.tensor = positions}, {*query_out}, {*key_out}});
}
