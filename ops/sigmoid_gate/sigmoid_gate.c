// sigmoid_gate.c: argument validation shared by every sigmoid_gate backend.
#include "ops/sigmoid_gate/sigmoid_gate.h"

#include <stdbool.h>

#include "ops/core/cpu_math.h"

parity_error *parity_sigmoid_gate_check(const parity_sigmoid_gate_args *args, int64_t *rows, int64_t *width,
                                        int64_t *gate_group) {
    const parity_tensor *input = args->input, *gate = args->gate;
    PARITY_CHECK(input && input->ndim >= 1, PARITY_ERROR_SHAPE, "sigmoid_gate: input must have at least one dimension");
    PARITY_CHECK(parity_dtype_is_float(input->dtype), PARITY_ERROR_SHAPE,
                 "sigmoid_gate: input is %s, expected a float dtype", parity_dtype_name(input->dtype));
    int ndim = input->ndim;
    *width = input->shape[ndim - 1];
    PARITY_CHECK(*width > 0, PARITY_ERROR_SHAPE, "sigmoid_gate: input's last dimension is 0");
    *rows = input->numel / *width;
    PARITY_CHECK(gate, PARITY_ERROR_SHAPE, "sigmoid_gate: gate is missing");
    bool leading_match = gate->ndim == ndim;
    for (int dim = 0; leading_match && dim < ndim - 1; dim++) leading_match = gate->shape[dim] == input->shape[dim];
    int64_t gate_width = gate->shape[gate->ndim > 0 ? gate->ndim - 1 : 0];
    if (!leading_match || (gate_width != *width && gate_width != 1)) {
        char actual[160], expected[160], broadcast[160];
        parity_tensor_shape_string(input, expected, sizeof expected);
        parity_tensor broadcast_view = *input;
        broadcast_view.shape[ndim - 1] = 1;
        parity_tensor_shape_string(&broadcast_view, broadcast, sizeof broadcast);
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "sigmoid_gate: gate has shape %s, expected %s or %s",
                            parity_tensor_shape_string(gate, actual, sizeof actual), expected, broadcast);
    }
    PARITY_TRY(parity_check_tensor("sigmoid_gate", "gate", gate, input->dtype, ndim, gate->shape));
    *gate_group = gate_width == *width ? 1 : *width;
    PARITY_TRY(parity_check_tensor("sigmoid_gate", "output", args->output, input->dtype, ndim, input->shape));
    return NULL;
}

parity_error *parity_sigmoid_gate_check_grads(const parity_sigmoid_gate_args *args,
                                              const parity_sigmoid_gate_grads *grads) {
    const parity_tensor *input = args->input, *gate = args->gate;
    PARITY_TRY(parity_check_tensor("sigmoid_gate", "doutput", grads->doutput, input->dtype, input->ndim, input->shape));
    if (grads->dinput)
        PARITY_TRY(parity_check_tensor("sigmoid_gate", "dinput", grads->dinput, input->dtype, input->ndim, input->shape));
    if (grads->dgate)
        PARITY_TRY(parity_check_tensor("sigmoid_gate", "dgate", grads->dgate, input->dtype, gate->ndim, gate->shape));
    return NULL;
}
