// node_l2_norm.c: L2 normalisation over the last dimension on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct l2_norm_record {
    const parity_l2_norm_kernels *kernels;
    parity_l2_norm_args args;
    parity_variable *input, *output;
} l2_norm_record;

static parity_error *l2_norm_backward(parity_tape *tape, parity_node *node) {
    l2_norm_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot input;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = NULL;
    if (input.target) {
        parity_l2_norm_grads grads = {&record->output->gradient, input.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    parity_gradient_slot_abandon(&input);
    return error;
}

parity_error *parity_node_l2_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                  double eps, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, input->value.shape,
                                        input->requires_gradient, out));
    l2_norm_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording l2_norm");
    *record = (l2_norm_record){backend->kernels, {&input->value, eps, &(*out)->value}, input, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_L2_NORM, backend->name, name, error, &saved, record, l2_norm_backward);
}
