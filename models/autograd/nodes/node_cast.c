// node_cast.c: dtype conversion on the tape (tape-level glue, no registry op). Forward converts with
// exact round-to-nearest-even (parity_tensor_convert, on the input's device: a CUDA tensor converts on the
// GPU, on the tape's stream); backward converts the gradient back to the input's dtype (rounded once) and accumulates it.
#include <stdlib.h>

#include "models/autograd/nodes.h"

typedef struct cast_record {
    parity_variable *input, *output;
} cast_record;

static parity_error *cast_backward(parity_tape *tape, parity_node *node) {
    cast_record *record = node->data;
    if (!record->output->has_gradient || !record->input->requires_gradient) return NULL;
    parity_tensor converted;
    PARITY_TRY(parity_tensor_convert(tape->exec, &converted, &record->output->gradient, record->input->value.dtype));
    parity_error *error = parity_variable_accumulate(record->input, &converted);
    parity_tensor_release(&converted);
    return error;
}

parity_error *parity_node_cast(parity_tape *tape, const char *name, parity_variable *input, parity_dtype dtype,
                               parity_variable **out) {
    char where[32], tape_device[32];
    PARITY_CHECK(parity_device_equal(input->value.device, tape->device), PARITY_ERROR_USAGE,
                 "%s: cast: the input is on %s, the tape on %s", name,
                 parity_device_format(input->value.device, where, sizeof where),
                 parity_device_format(tape->device, tape_device, sizeof tape_device));
    PARITY_CHECK(parity_dtype_is_float(input->value.dtype) && parity_dtype_is_float(dtype), PARITY_ERROR_SHAPE,
                 "%s: cast: from %s to %s, expected float dtypes", name, parity_dtype_name(input->value.dtype),
                 parity_dtype_name(dtype));
    parity_tensor converted;
    PARITY_TRY_CONTEXT(parity_tensor_convert(tape->exec, &converted, &input->value, dtype), "%s: cast", name);
    parity_error *error = parity_tape_adopt(tape, name, &converted, input->requires_gradient, out); // the tape owns the copy
    parity_tensor_release(&converted);                                                          // (a no-op once adopted)
    PARITY_TRY(error);
    cast_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording cast");
    *record = (cast_record){input, *out};
    return parity_tape_push(tape, "cast", "glue", cast_backward, NULL, record);
}
