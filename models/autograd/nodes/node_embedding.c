// node_embedding.c: token embedding lookup on the tape (ids are data, only the table is differentiated).
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct embedding_record {
    const parity_embedding_kernels *kernels;
    parity_embedding_args args;
    parity_tensor ids; // a view of the caller's ids (their storage must outlive backward)
    parity_variable *weight, *output;
} embedding_record;

static parity_error *embedding_backward(parity_tape *tape, parity_node *node) {
    embedding_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot weight;
    PARITY_TRY(parity_gradient_slot_open(&weight, record->weight));
    parity_error *error = NULL;
    if (weight.target) {
        parity_embedding_grads grads = {&record->output->gradient, weight.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&weight);
    parity_gradient_slot_abandon(&weight);
    return error;
}

parity_error *parity_node_embedding(parity_tape *tape, const parity_backend *backend, const char *name,
                                    const parity_tensor *ids, parity_variable *weight, int64_t padding_idx,
                                    parity_variable **out) {
    PARITY_CHECK(ids && ids->ndim < PARITY_MAX_DIMS && weight->value.ndim == 2, PARITY_ERROR_SHAPE,
                 "%s: embedding (%s): ids have rank %d and weight rank %d, expected ids of rank < %d and (V, H)", name,
                 backend->name, ids ? ids->ndim : -1, weight->value.ndim, PARITY_MAX_DIMS);
    // (ids' shape, H)
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, ids->shape, sizeof shape);
    shape[ids->ndim] = weight->value.shape[1];
    PARITY_TRY(parity_tape_new_variable(tape, name, weight->value.dtype, ids->ndim + 1, shape, weight->requires_gradient, out));
    embedding_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording embedding");
    *record = (embedding_record){backend->kernels, {.ids = NULL, .weight = &weight->value, .output = &(*out)->value}, *ids, weight, *out};
    record->ids.owns_data = false;
    record->ids.allocated_bytes = 0;
    record->args.ids = &record->ids;
    record->args.has_padding_idx = padding_idx >= 0;
    record->args.padding_idx = padding_idx;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_EMBEDDING, backend->name, name, error, &saved, record, embedding_backward);
}
