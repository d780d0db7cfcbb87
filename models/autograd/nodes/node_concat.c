// node_concat.c: concatenation along the last dimension on the tape (a variable may appear twice).
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct concat_record {
    const parity_concat_kernels *kernels;
    parity_concat_args args;
    parity_variable *parts[PARITY_CONCAT_MAX_PARTS], *output;
} concat_record;

static parity_error *concat_backward(parity_tape *tape, parity_node *node) {
    concat_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    int count = record->args.count;
    parity_gradient_slot slots[PARITY_CONCAT_MAX_PARTS];
    parity_error *error = NULL;
    int opened = 0;
    for (; opened < count && !error; opened++) error = parity_gradient_slot_open(&slots[opened], record->parts[opened]);
    if (!error) {
        parity_concat_grads grads = {.doutput = &record->output->gradient};
        for (int i = 0; i < count; i++) grads.dparts[i] = slots[i].target;
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < opened; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_concat(parity_tape *tape, const parity_backend *backend, const char *name,
                                 parity_variable *const *parts, int count, parity_variable **out) {
    PARITY_CHECK(count >= 2 && count <= PARITY_CONCAT_MAX_PARTS, PARITY_ERROR_SHAPE,
                 "%s: concat (%s): %d parts, expected 2 to %d", name, backend->name, count, PARITY_CONCAT_MAX_PARTS);
    // (..., D_0 + D_1 + ...): the first part's leading shape; the op checks the others against it
    bool needs_gradient = false;
    int64_t width = 0;
    for (int i = 0; i < count; i++) {
        PARITY_CHECK(parts[i]->value.ndim >= 1, PARITY_ERROR_SHAPE, "%s: concat (%s): part %d is a scalar", name,
                     backend->name, i);
        width += parts[i]->value.shape[parts[i]->value.ndim - 1];
        needs_gradient = needs_gradient || parts[i]->requires_gradient;
    }
    int ndim = parts[0]->value.ndim;
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, parts[0]->value.shape, sizeof shape);
    shape[ndim - 1] = width;
    PARITY_TRY(parity_tape_new_variable(tape, name, parts[0]->value.dtype, ndim, shape, needs_gradient, out));
    concat_record *record = calloc(1, sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording concat");
    record->kernels = backend->kernels;
    record->args.count = count;
    record->args.output = &(*out)->value;
    for (int i = 0; i < count; i++) {
        record->parts[i] = parts[i];
        record->args.parts[i] = &parts[i]->value;
    }
    record->output = *out;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_CONCAT, backend->name, name, error, &saved, record, concat_backward);
}
