// node_stack_rows.c: concatenation along the first dimension on the tape (tape-level glue, no registry
// op), e.g. per-layer router logits (N, E) -> (L*N, E). Backward hands each part its rows of the
// output's gradient. Works on any device: the rows are views and copies (device to device on a GPU).
#include <stdlib.h>
#include <string.h>

#include "models/autograd/nodes.h"

typedef struct stack_rows_record {
    parity_variable *output;
    int count;
    parity_variable *parts[]; // count of them
} stack_rows_record;

// The rows [start, start + rows) of a contiguous tensor, as a view (pointer arithmetic only: any device).
static parity_tensor rows_view(const parity_tensor *tensor, int64_t start, int64_t rows) {
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, tensor->shape, sizeof shape);
    shape[0] = rows;
    int64_t row_elements = 1;
    for (int d = 1; d < tensor->ndim; d++) row_elements *= tensor->shape[d];
    char *base = (char *)tensor->data + (size_t)(start * row_elements) * parity_dtype_size(tensor->dtype);
    return parity_tensor_wrap(base, tensor->dtype, tensor->device, tensor->ndim, shape);
}

static parity_error *stack_rows_backward(parity_tape *tape, parity_node *node) {
    stack_rows_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    int64_t start = 0;
    for (int i = 0; i < record->count; i++) {
        parity_variable *part = record->parts[i];
        int64_t rows = part->value.shape[0];
        parity_tensor slice = rows_view(&record->output->gradient, start, rows);
        PARITY_TRY(parity_variable_accumulate(part, &slice));
        start += rows;
    }
    return NULL;
}

parity_error *parity_node_stack_rows(parity_tape *tape, const char *name, parity_variable *const *parts, int count,
                                     parity_variable **out) {
    PARITY_CHECK(count >= 1, PARITY_ERROR_SHAPE, "%s: stack_rows: %d parts, expected at least one", name, count);
    bool needs_gradient = false;
    int64_t rows = 0;
    const parity_tensor *first = &parts[0]->value;
    for (int i = 0; i < count; i++) {
        const parity_tensor *part = &parts[i]->value;
        char shape[160], expected[160], where[32], tape_device[32];
        PARITY_CHECK(parity_device_equal(part->device, tape->device) && parity_tensor_is_contiguous(part), PARITY_ERROR_USAGE,
                     "%s: stack_rows: part %d is %s on %s, expected a contiguous tensor on the tape's device %s", name, i,
                     parity_tensor_is_contiguous(part) ? "contiguous" : "strided",
                     parity_device_format(part->device, where, sizeof where),
                     parity_device_format(tape->device, tape_device, sizeof tape_device));
        PARITY_CHECK(part->ndim >= 1 && part->ndim == first->ndim && part->dtype == first->dtype &&
                         memcmp(part->shape + 1, first->shape + 1, (size_t)(first->ndim - 1) * sizeof(int64_t)) == 0,
                     PARITY_ERROR_SHAPE,
                     "%s: stack_rows: part %d is %s %s, expected part 0's dtype and trailing shape (%s %s)", name, i,
                     parity_tensor_shape_string(part, shape, sizeof shape), parity_dtype_name(part->dtype),
                     parity_tensor_shape_string(first, expected, sizeof expected), parity_dtype_name(first->dtype));
        rows += part->shape[0];
        needs_gradient = needs_gradient || parts[i]->requires_gradient;
    }
    // (rows of every part, the parts' trailing shape)
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, first->shape, sizeof shape);
    shape[0] = rows;
    PARITY_TRY(parity_tape_new_variable(tape, name, first->dtype, first->ndim, shape, needs_gradient, out));
    int64_t start = 0;
    for (int i = 0; i < count; i++) {
        parity_tensor slice = rows_view(&(*out)->value, start, parts[i]->value.shape[0]);
        PARITY_TRY_CONTEXT(parity_tensor_copy(&slice, &parts[i]->value), "%s: stack_rows: part %d", name, i);
        start += parts[i]->value.shape[0];
    }
    stack_rows_record *record = malloc(sizeof *record + (size_t)count * sizeof record->parts[0]);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording stack_rows");
    record->output = *out;
    record->count = count;
    memcpy(record->parts, parts, (size_t)count * sizeof parts[0]);
    return parity_tape_push(tape, "stack_rows", "glue", stack_rows_backward, NULL, record);
}
