// node_cast.c: dtype conversion on the tape (tape-level glue, no registry op). Forward converts with
// exact round-to-nearest-even (parity_tensor_to); backward converts the gradient back to the input's
// dtype (rounded once) and accumulates it. CPU tensors only for now.
#include <stdlib.h>

#include "models/autograd/nodes.h"

typedef struct cast_record {
    parity_variable *input, *output;
} cast_record;

static parity_error *cast_backward(parity_tape *tape, parity_node *node) {
    cast_record *record = node->data;
    if (!record->output->has_gradient || !record->input->requires_gradient) return NULL;
    parity_tensor converted;
    PARITY_TRY(parity_tensor_to(&converted, &record->output->gradient, PARITY_CPU, record->input->value.dtype));
    parity_error *error = parity_variable_accumulate(record->input, &converted);
    parity_tensor_release(&converted);
    return error;
}

parity_error *parity_node_cast(parity_tape *tape, const char *name, parity_variable *input, parity_dtype dtype,
                               parity_variable **out) {
    if (tape->device.type != PARITY_DEVICE_CPU || input->value.device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s: cast (host): not built yet for %s tensors", name,
                            parity_device_type_name(input->value.device.type != PARITY_DEVICE_CPU ? input->value.device.type
                                                                                                   : tape->device.type));
    PARITY_CHECK(parity_dtype_is_float(input->value.dtype) && parity_dtype_is_float(dtype), PARITY_ERROR_SHAPE,
                 "%s: cast (host): from %s to %s, expected float dtypes", name, parity_dtype_name(input->value.dtype),
                 parity_dtype_name(dtype));
    parity_tensor converted;
    PARITY_TRY_CONTEXT(parity_tensor_to(&converted, &input->value, PARITY_CPU, dtype), "%s: cast (host)", name);
    parity_error *error = parity_tape_borrow(tape, name, &converted, input->requires_gradient, out);
    if (error) {
        parity_tensor_release(&converted);
        return error;
    }
    (*out)->value = converted; // the tape owns the converted storage from here
    cast_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording cast");
    *record = (cast_record){input, *out};
    return parity_tape_push(tape, "cast", "host", cast_backward, NULL, record);
}
