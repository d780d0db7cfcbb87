// node_split.c: splitting along the last dimension on the tape. Parts that receive no gradient are
// passed to the op's backward as NULL (the op reads them as zeros).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct split_record {
    const parity_split_kernels *kernels;
    parity_split_args args;
    parity_variable *input, *parts[PARITY_SPLIT_MAX_PARTS];
} split_record;

static parity_error *split_backward(parity_tape *tape, parity_node *node) {
    split_record *record = node->data;
    parity_split_grads grads = {0};
    bool any = false;
    for (int i = 0; i < record->args.count; i++) {
        if (!record->parts[i]->has_gradient) continue;
        grads.dparts[i] = &record->parts[i]->gradient;
        any = true;
    }
    if (!any) return NULL;
    parity_gradient_slot input;
    PARITY_TRY(parity_gradient_slot_open(&input, record->input));
    parity_error *error = NULL;
    if (input.target) {
        grads.dinput = input.target;
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&input);
    parity_gradient_slot_abandon(&input);
    return error;
}

parity_error *parity_node_split(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                const int64_t *sizes, int count, parity_variable **parts) {
    int ndim = input->value.ndim;
    PARITY_CHECK(count >= 2 && count <= PARITY_SPLIT_MAX_PARTS, PARITY_ERROR_SHAPE,
                 "%s: split (%s): %d parts, expected 2 to %d", name, backend->name, count, PARITY_SPLIT_MAX_PARTS);
    PARITY_CHECK(ndim >= 1, PARITY_ERROR_SHAPE, "%s: split (%s): the input is a scalar", name, backend->name);
    int64_t total = 0;
    for (int i = 0; i < count; i++) {
        PARITY_CHECK(sizes[i] >= 0, PARITY_ERROR_SHAPE, "%s: split (%s): part %d has negative size %lld", name,
                     backend->name, i, (long long)sizes[i]);
        total += sizes[i];
    }
    PARITY_CHECK(total == input->value.shape[ndim - 1], PARITY_ERROR_SHAPE,
                 "%s: split (%s): sizes add up to %lld, the input's last dimension is %lld", name, backend->name,
                 (long long)total, (long long)input->value.shape[ndim - 1]);
    // part i (..., sizes[i]): the input's leading shape
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, input->value.shape, sizeof shape);
    for (int i = 0; i < count; i++) {
        char part_name[128];
        snprintf(part_name, sizeof part_name, "%s (part %d)", name, i);
        shape[ndim - 1] = sizes[i];
        PARITY_TRY(parity_tape_new_variable(tape, part_name, input->value.dtype, ndim, shape, input->requires_gradient,
                                            &parts[i]));
    }
    split_record *record = calloc(1, sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording split");
    record->kernels = backend->kernels;
    record->args.input = &input->value;
    record->args.count = count;
    record->input = input;
    for (int i = 0; i < count; i++) {
        record->parts[i] = parts[i];
        record->args.parts[i] = &parts[i]->value;
    }
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_SPLIT, backend->name, name, error, &saved, record, split_backward);
}
