// node_sigmoid_gate.c: y = x * sigmoid(gate) on the tape (gate of x's shape, or one per row).
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct sigmoid_gate_record {
    const parity_sigmoid_gate_kernels *kernels;
    parity_sigmoid_gate_args args;
    parity_variable *input, *gate, *output;
} sigmoid_gate_record;

static parity_error *sigmoid_gate_backward(parity_tape *tape, parity_node *node) {
    sigmoid_gate_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot input, gate;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = parity_gradient_slot_open(&gate, record->gate);
    if (!error) {
        parity_sigmoid_gate_grads grads = {&record->output->gradient, input.target, gate.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    if (!error) error = parity_gradient_slot_close(&gate);
    parity_gradient_slot_abandon(&input);
    parity_gradient_slot_abandon(&gate);
    return error;
}

parity_error *parity_node_sigmoid_gate(parity_tape *tape, const parity_backend *backend, const char *name,
                                       parity_variable *input, parity_variable *gate, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, input->value.shape,
                                        input->requires_gradient || gate->requires_gradient, out));
    sigmoid_gate_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording sigmoid_gate");
    *record = (sigmoid_gate_record){backend->kernels, {&input->value, &gate->value, &(*out)->value}, input, gate, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_SIGMOID_GATE, backend->name, name, error, &saved, record, sigmoid_gate_backward);
}
