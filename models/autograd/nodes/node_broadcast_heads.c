// node_broadcast_heads.c: one head broadcast to every head, (N, 1, D) -> (N, H, D), on the tape.
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct broadcast_heads_record {
    const parity_broadcast_heads_kernels *kernels;
    parity_broadcast_heads_args args;
    parity_variable *input, *output;
} broadcast_heads_record;

static parity_error *broadcast_heads_backward(parity_tape *tape, parity_node *node) {
    broadcast_heads_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot input;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = NULL;
    if (input.target) {
        parity_broadcast_heads_grads grads = {&record->output->gradient, input.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    parity_gradient_slot_abandon(&input);
    return error;
}

parity_error *parity_node_broadcast_heads(parity_tape *tape, const parity_backend *backend, const char *name,
                                          parity_variable *input, int64_t heads, parity_variable **out) {
    int ndim = input->value.ndim;
    PARITY_CHECK(ndim >= 2, PARITY_ERROR_SHAPE, "%s: broadcast_heads (%s): input has rank %d, expected (N, 1, D)", name,
                 backend->name, ndim);
    // (N, H, D): the input's shape with `heads` in place of its single head
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, input->value.shape, sizeof shape);
    shape[ndim - 2] = heads;
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, ndim, shape, input->requires_gradient, out));
    broadcast_heads_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording broadcast_heads");
    *record = (broadcast_heads_record){backend->kernels, {&input->value, &(*out)->value}, input, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_BROADCAST_HEADS, backend->name, name, error, &saved, record, broadcast_heads_backward);
}
