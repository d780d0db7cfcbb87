// node_cross_entropy.c: the causal-LM loss on the tape (hidden states + lm_head weight in, scalar out).
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct cross_entropy_record {
    const parity_cross_entropy_kernels *kernels;
    parity_cross_entropy_args args;
    parity_variable *hidden, *weight, *loss;
} cross_entropy_record;

static parity_error *cross_entropy_backward(parity_tape *tape, parity_node *node) {
    cross_entropy_record *record = node->data;
    if (!record->loss->has_gradient) return NULL;
    parity_gradient_slot hidden, weight;
    PARITY_TRY(parity_gradient_slot_open(&hidden, record->hidden));
    parity_error *error = parity_gradient_slot_open(&weight, record->weight);
    if (!error) {
        parity_cross_entropy_grads grads = {&record->loss->gradient, hidden.target, weight.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&hidden);
    if (!error) error = parity_gradient_slot_close(&weight);
    parity_gradient_slot_abandon(&hidden);
    parity_gradient_slot_abandon(&weight);
    return error;
}

parity_error *parity_node_cross_entropy(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *hidden, parity_variable *weight, const parity_tensor *targets,
                                        int64_t num_items_in_batch, parity_variable **loss, parity_variable **logits) {
    parity_dtype loss_dtype = hidden->value.dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(parity_tape_new_variable(tape, name, loss_dtype, 0, NULL, true, loss));
    if (logits) {
        char logits_name[128];
        snprintf(logits_name, sizeof logits_name, "%s (logits)", name);
        PARITY_TRY(parity_tape_new_variable(tape, logits_name, hidden->value.dtype,
                                            PARITY_SHAPE(hidden->value.shape[0], weight->value.shape[0]), false, logits));
    }
    cross_entropy_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording cross_entropy");
    *record = (cross_entropy_record){backend->kernels,
                                     {.hidden = &hidden->value, .weight = &weight->value, .targets = targets,
                                      .ignore_index = PARITY_CROSS_ENTROPY_IGNORE_INDEX,
                                      .num_items_in_batch = num_items_in_batch, .chunk_size = 0, .loss = &(*loss)->value,
                                      .logits = logits ? &(*logits)->value : NULL, .valid_count = NULL},
                                     hidden, weight, *loss};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    record->args.logits = NULL; // backward never needs them
    return parity_tape_record(tape, PARITY_OP_CROSS_ENTROPY, backend->name, name, error, &saved, record, cross_entropy_backward);
}
