// node_linear.c: the dense layer y = x W^T + b on the tape.
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct linear_record {
    const parity_linear_kernels *kernels;
    parity_linear_args args;
    parity_variable *input, *weight, *bias, *output; // bias may be NULL
} linear_record;

static parity_error *linear_backward(parity_tape *tape, parity_node *node) {
    linear_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot slots[3];
    parity_variable *inputs[3] = {record->input, record->weight, record->bias};
    parity_error *error = NULL;
    int opened = 0;
    for (; opened < 3 && !error; opened++) error = parity_gradient_slot_open(&slots[opened], inputs[opened]);
    if (!error) {
        parity_linear_grads grads = {&record->output->gradient, slots[0].target, slots[1].target, slots[2].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < opened; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_linear(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                 parity_variable *weight, parity_variable *bias, parity_variable **out) {
    PARITY_CHECK(input->value.ndim >= 1 && weight->value.ndim == 2, PARITY_ERROR_SHAPE,
                 "%s: linear (%s): input has rank %d and weight rank %d, expected (..., in) and (out, in)", name,
                 backend->name, input->value.ndim, weight->value.ndim);
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, input->value.shape, sizeof shape);
    shape[input->value.ndim - 1] = weight->value.shape[0];
    bool needs_gradient = input->requires_gradient || weight->requires_gradient || (bias && bias->requires_gradient);
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, shape, needs_gradient, out));
    linear_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording linear");
    *record = (linear_record){backend->kernels,
                              {&input->value, &weight->value, bias ? &bias->value : NULL, &(*out)->value},
                              input, weight, bias, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_LINEAR, backend->name, name, error, &saved, record, linear_backward);
}
