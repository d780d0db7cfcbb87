// node_weighted_sum.c: out = weight_a * a + weight_b * b for scalar variables (tape-level glue, no
// registry op): the loss plus router_aux_loss_coef times the auxiliary loss. Computed in f64 and
// stored in a's dtype; b's dtype may differ. Backward: da = weight_a * dout rounded to a's dtype,
// db = weight_b * dout rounded to b's dtype. The scalars may live on any device: they are read and
// written through one-element host copies.
#include <stdlib.h>
#include <string.h>

#include "models/autograd/nodes.h"

// The one element of a scalar tensor (any device), as f64.
static parity_error *read_scalar(const parity_tensor *tensor, double *out) {
    if (tensor->device.type == PARITY_DEVICE_CPU) {
        *out = parity_tensor_get(tensor, 0);
        return NULL;
    }
    parity_tensor host;
    PARITY_TRY(parity_tensor_to(&host, tensor, PARITY_CPU, tensor->dtype));
    *out = parity_tensor_get(&host, 0);
    parity_tensor_release(&host);
    return NULL;
}

// A new scalar tensor shaped like `like` (dtype, shape, device) holding `value` rounded once to the dtype.
static parity_error *scalar_like(const parity_tensor *like, double value, parity_tensor *out) {
    parity_tensor host;
    PARITY_TRY(parity_tensor_alloc(&host, like->dtype, PARITY_CPU, like->ndim, like->shape));
    parity_tensor_set(&host, 0, value);
    if (like->device.type == PARITY_DEVICE_CPU) {
        *out = host;
        return NULL;
    }
    parity_error *error = parity_tensor_to(out, &host, like->device, like->dtype);
    parity_tensor_release(&host);
    return error;
}

typedef struct weighted_sum_record {
    parity_variable *a, *b, *output;
    double weight_a, weight_b;
} weighted_sum_record;

// Accumulates weight * dout (one element) into `variable`, rounded to its dtype.
static parity_error *accumulate_scaled(parity_variable *variable, double weight, double dout) {
    if (!variable->requires_gradient) return NULL;
    parity_tensor contribution;
    PARITY_TRY(scalar_like(&variable->value, weight * dout, &contribution));
    parity_error *error = parity_variable_accumulate(variable, &contribution);
    parity_tensor_release(&contribution);
    return error;
}

static parity_error *weighted_sum_backward(parity_tape *tape, parity_node *node) {
    weighted_sum_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    double dout;
    PARITY_TRY(read_scalar(&record->output->gradient, &dout));
    PARITY_TRY(accumulate_scaled(record->a, record->weight_a, dout));
    return accumulate_scaled(record->b, record->weight_b, dout);
}

parity_error *parity_node_weighted_sum(parity_tape *tape, const char *name, parity_variable *a, double weight_a,
                                       parity_variable *b, double weight_b, parity_variable **out) {
    char where_a[32], where_b[32], tape_device[32];
    PARITY_CHECK(parity_device_equal(a->value.device, tape->device) && parity_device_equal(b->value.device, tape->device),
                 PARITY_ERROR_USAGE, "%s: weighted_sum: a is on %s and b on %s, expected both on the tape's device %s", name,
                 parity_device_format(a->value.device, where_a, sizeof where_a),
                 parity_device_format(b->value.device, where_b, sizeof where_b),
                 parity_device_format(tape->device, tape_device, sizeof tape_device));
    PARITY_CHECK(a->value.numel == 1 && b->value.numel == 1, PARITY_ERROR_SHAPE,
                 "%s: weighted_sum: a has %lld elements and b %lld, expected scalars", name, (long long)a->value.numel,
                 (long long)b->value.numel);
    PARITY_CHECK(parity_dtype_is_float(a->value.dtype) && parity_dtype_is_float(b->value.dtype), PARITY_ERROR_SHAPE,
                 "%s: weighted_sum: a is %s and b %s, expected float dtypes", name, parity_dtype_name(a->value.dtype),
                 parity_dtype_name(b->value.dtype));
    double value_a, value_b;
    PARITY_TRY(read_scalar(&a->value, &value_a));
    PARITY_TRY(read_scalar(&b->value, &value_b));
    parity_tensor sum;
    PARITY_TRY(scalar_like(&a->value, weight_a * value_a + weight_b * value_b, &sum));
    parity_error *error = parity_tape_adopt(tape, name, &sum, a->requires_gradient || b->requires_gradient, out);
    parity_tensor_release(&sum); // a no-op once adopted
    PARITY_TRY(error);
    weighted_sum_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording weighted_sum");
    *record = (weighted_sum_record){a, b, *out, weight_a, weight_b};
    return parity_tape_push(tape, "weighted_sum", "glue", weighted_sum_backward, NULL, record);
}
