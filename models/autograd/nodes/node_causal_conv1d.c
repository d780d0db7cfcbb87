// node_causal_conv1d.c: the depthwise causal conv1d (+ activation) of GatedDeltaNet on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct causal_conv1d_record {
    const parity_causal_conv1d_kernels *kernels;
    parity_causal_conv1d_args args;
    parity_tensor cu_seqlens; // a view of the caller's boundaries (their storage must outlive backward)
    parity_variable *input, *weight, *output;
} causal_conv1d_record;

static parity_error *causal_conv1d_backward(parity_tape *tape, parity_node *node) {
    causal_conv1d_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot input, weight;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = parity_gradient_slot_open(&weight, record->weight);
    if (!error) {
        parity_causal_conv1d_grads grads = {&record->output->gradient, input.target, weight.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    if (!error) error = parity_gradient_slot_close(&weight);
    parity_gradient_slot_abandon(&input);
    parity_gradient_slot_abandon(&weight);
    return error;
}

parity_error *parity_node_causal_conv1d(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *input, parity_variable *weight, const parity_tensor *cu_seqlens,
                                        parity_causal_conv1d_activation activation, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, input->value.shape,
                                        input->requires_gradient || weight->requires_gradient, out));
    causal_conv1d_record *record = calloc(1, sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording causal_conv1d");
    record->kernels = backend->kernels;
    record->args = (parity_causal_conv1d_args){&input->value, &weight->value, NULL, activation, &(*out)->value};
    if (cu_seqlens) {
        record->cu_seqlens = *cu_seqlens;
        record->cu_seqlens.owns_data = false;
        record->cu_seqlens.allocated_bytes = 0;
        record->args.cu_seqlens = &record->cu_seqlens;
    }
    record->input = input;
    record->weight = weight;
    record->output = *out;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_CAUSAL_CONV1D, backend->name, name, error, &saved, record, causal_conv1d_backward);
}
