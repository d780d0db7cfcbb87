// node_add.c: the residual add y = a + b on the tape (a and b may be the same variable).
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct add_record {
    const parity_add_kernels *kernels;
    parity_add_args args;
    parity_variable *a, *b, *output;
} add_record;

static parity_error *add_backward(parity_tape *tape, parity_node *node) {
    add_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot a, b;
    PARITY_TRY(parity_gradient_slot_open(&a, record->a));
    parity_error *error = parity_gradient_slot_open(&b, record->b);
    if (!error) {
        parity_add_grads grads = {&record->output->gradient, a.target, b.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&a);
    if (!error) error = parity_gradient_slot_close(&b);
    parity_gradient_slot_abandon(&a);
    parity_gradient_slot_abandon(&b);
    return error;
}

parity_error *parity_node_add(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                              parity_variable *b, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, a->value.dtype, a->value.ndim, a->value.shape,
                                        a->requires_gradient || b->requires_gradient, out));
    add_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording add");
    *record = (add_record){backend->kernels, {&a->value, &b->value, &(*out)->value}, a, b, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_ADD, backend->name, name, error, &saved, record, add_backward);
}
