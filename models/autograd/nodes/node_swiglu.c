// node_swiglu.c: silu(gate) * up on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct swiglu_record {
    const parity_swiglu_kernels *kernels;
    parity_swiglu_args args;
    parity_variable *gate, *up, *output;
} swiglu_record;

static parity_error *swiglu_backward(parity_tape *tape, parity_node *node) {
    swiglu_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot gate, up = {0};
    PARITY_TRY(parity_gradient_slot_open(&gate, record->gate));
    parity_error *error = parity_gradient_slot_open(&up, record->up);
    if (!error) {
        parity_swiglu_grads grads = {&record->output->gradient, gate.target, up.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&gate);
    if (!error) error = parity_gradient_slot_close(&up);
    parity_gradient_slot_abandon(&gate);
    parity_gradient_slot_abandon(&up);
    return error;
}

parity_error *parity_node_swiglu(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *gate,
                                 parity_variable *up, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, gate->value.dtype, gate->value.ndim, gate->value.shape,
                                        gate->requires_gradient || up->requires_gradient, out));
    swiglu_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording swiglu");
    *record = (swiglu_record){backend->kernels, {&gate->value, &up->value, &(*out)->value}, gate, up, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_SWIGLU, backend->name, name, error, &saved, record, swiglu_backward);
}
