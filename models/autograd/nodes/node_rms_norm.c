// node_rms_norm.c: RMSNorm on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct rms_norm_record {
    const parity_rms_norm_kernels *kernels;
    parity_rms_norm_args args;
    parity_variable *input, *weight, *output;
} rms_norm_record;

static parity_error *rms_norm_backward(parity_tape *tape, parity_node *node) {
    rms_norm_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot input, weight;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = parity_gradient_slot_open(&weight, record->weight);
    if (!error) {
        parity_rms_norm_grads grads = {&record->output->gradient, input.target, weight.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    if (!error) error = parity_gradient_slot_close(&weight);
    parity_gradient_slot_abandon(&input);
    parity_gradient_slot_abandon(&weight);
    return error;
}

parity_error *parity_node_rms_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                   parity_variable *weight, double eps, parity_rms_norm_variant variant, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, input->value.shape,
                                        input->requires_gradient || weight->requires_gradient, out));
    rms_norm_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording rms_norm");
    *record = (rms_norm_record){backend->kernels, {&input->value, &weight->value, eps, variant, &(*out)->value}, input, weight, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_RMS_NORM, backend->name, name, error, &saved, record, rms_norm_backward);
}
