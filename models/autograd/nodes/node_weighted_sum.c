// node_weighted_sum.c: out = weight_a * a + weight_b * b for scalar variables (tape-level glue, no
// registry op): the loss plus router_aux_loss_coef times the auxiliary loss. Computed in f64 and
// stored in a's dtype; b's dtype may differ. Backward: da = weight_a * dout rounded to a's dtype,
// db = weight_b * dout rounded to b's dtype. CPU tensors only for now.
#include <stdlib.h>

#include "models/autograd/nodes.h"

typedef struct weighted_sum_record {
    parity_variable *a, *b, *output;
    double weight_a, weight_b;
} weighted_sum_record;

// Accumulates weight * dout (one element) into `variable`, rounded to its dtype.
static parity_error *accumulate_scaled(parity_variable *variable, double weight, double dout) {
    if (!variable->requires_gradient) return NULL;
    parity_tensor contribution;
    PARITY_TRY(parity_tensor_alloc(&contribution, variable->value.dtype, PARITY_CPU, variable->value.ndim,
                                   variable->value.shape));
    parity_tensor_set(&contribution, 0, weight * dout);
    parity_error *error = parity_variable_accumulate(variable, &contribution);
    parity_tensor_release(&contribution);
    return error;
}

static parity_error *weighted_sum_backward(parity_tape *tape, parity_node *node) {
    weighted_sum_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    double dout = parity_tensor_get(&record->output->gradient, 0);
    PARITY_TRY(accumulate_scaled(record->a, record->weight_a, dout));
    return accumulate_scaled(record->b, record->weight_b, dout);
}

parity_error *parity_node_weighted_sum(parity_tape *tape, const char *name, parity_variable *a, double weight_a,
                                       parity_variable *b, double weight_b, parity_variable **out) {
    if (tape->device.type != PARITY_DEVICE_CPU || a->value.device.type != PARITY_DEVICE_CPU ||
        b->value.device.type != PARITY_DEVICE_CPU) {
        parity_device_type device = a->value.device.type != PARITY_DEVICE_CPU   ? a->value.device.type
                                    : b->value.device.type != PARITY_DEVICE_CPU ? b->value.device.type
                                                                                : tape->device.type;
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s: weighted_sum (host): not built yet for %s tensors", name,
                            parity_device_type_name(device));
    }
    PARITY_CHECK(a->value.numel == 1 && b->value.numel == 1, PARITY_ERROR_SHAPE,
                 "%s: weighted_sum (host): a has %lld elements and b %lld, expected scalars", name,
                 (long long)a->value.numel, (long long)b->value.numel);
    PARITY_CHECK(parity_dtype_is_float(a->value.dtype) && parity_dtype_is_float(b->value.dtype), PARITY_ERROR_SHAPE,
                 "%s: weighted_sum (host): a is %s and b %s, expected float dtypes", name, parity_dtype_name(a->value.dtype),
                 parity_dtype_name(b->value.dtype));
    PARITY_TRY(parity_tape_new_variable(tape, name, a->value.dtype, a->value.ndim, a->value.shape,
                                        a->requires_gradient || b->requires_gradient, out));
    double sum = weight_a * parity_tensor_get(&a->value, 0) + weight_b * parity_tensor_get(&b->value, 0);
    parity_tensor_set(&(*out)->value, 0, sum);
    weighted_sum_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording weighted_sum");
    *record = (weighted_sum_record){a, b, *out, weight_a, weight_b};
    return parity_tape_push(tape, "weighted_sum", "host", weighted_sum_backward, NULL, record);
}
