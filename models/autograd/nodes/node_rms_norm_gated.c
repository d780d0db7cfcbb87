// node_rms_norm_gated.c: Qwen3.5's gated RMSNorm (norm, then * silu(gate)) on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct rms_norm_gated_record {
    const parity_rms_norm_gated_kernels *kernels;
    parity_rms_norm_gated_args args;
    parity_variable *input, *gate, *weight, *output;
} rms_norm_gated_record;

static parity_error *rms_norm_gated_backward(parity_tape *tape, parity_node *node) {
    rms_norm_gated_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot slots[3] = {{0}};
    parity_variable *inputs[3] = {record->input, record->gate, record->weight};
    parity_error *error = NULL;
    for (int i = 0; i < 3 && !error; i++) error = parity_gradient_slot_open(&slots[i], inputs[i]);
    if (!error) {
        parity_rms_norm_gated_grads grads = {&record->output->gradient, slots[0].target, slots[1].target, slots[2].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < 3; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_rms_norm_gated(parity_tape *tape, const parity_backend *backend, const char *name,
                                         parity_variable *input, parity_variable *gate, parity_variable *weight, double eps,
                                         parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, input->value.shape,
                                        input->requires_gradient || gate->requires_gradient || weight->requires_gradient, out));
    rms_norm_gated_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording rms_norm_gated");
    *record = (rms_norm_gated_record){backend->kernels, {&input->value, &gate->value, &weight->value, eps, &(*out)->value},
                                      input, gate, weight, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_RMS_NORM_GATED, backend->name, name, error, &saved, record, rms_norm_gated_backward);
}
