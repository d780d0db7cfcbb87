// node_matmul.c: batched C = op(A) op(B) on the tape.
#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct matmul_record {
    const parity_matmul_kernels *kernels;
    parity_matmul_args args;
    parity_variable *a, *b, *output;
} matmul_record;

static parity_error *matmul_backward(parity_tape *tape, parity_node *node) {
    matmul_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot a, b;
    PARITY_TRY(parity_gradient_slot_open(&a, record->a));
    parity_error *error = parity_gradient_slot_open(&b, record->b);
    if (!error) {
        parity_matmul_grads grads = {&record->output->gradient, a.target, b.target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    if (!error) error = parity_gradient_slot_close(&a);
    if (!error) error = parity_gradient_slot_close(&b);
    parity_gradient_slot_abandon(&a);
    parity_gradient_slot_abandon(&b);
    return error;
}

parity_error *parity_node_matmul(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                                 parity_variable *b, bool transpose_a, bool transpose_b, parity_variable **out) {
    int ndim = a->value.ndim;
    PARITY_CHECK(ndim >= 2 && b->value.ndim >= 2, PARITY_ERROR_SHAPE,
                 "%s: matmul (%s): a has rank %d and b rank %d, expected (batch, M, K) and (batch, K, N)", name,
                 backend->name, a->value.ndim, b->value.ndim);
    // (batch, M, N): a's batch dimensions, then M from a and N from b
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, a->value.shape, sizeof shape);
    shape[ndim - 2] = transpose_a ? a->value.shape[ndim - 1] : a->value.shape[ndim - 2];
    shape[ndim - 1] = transpose_b ? b->value.shape[b->value.ndim - 2] : b->value.shape[b->value.ndim - 1];
    PARITY_TRY(parity_tape_new_variable(tape, name, a->value.dtype, ndim, shape, a->requires_gradient || b->requires_gradient,
                                        out));
    matmul_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording matmul");
    *record = (matmul_record){backend->kernels, {&a->value, &b->value, transpose_a, transpose_b, &(*out)->value}, a, b, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_MATMUL, backend->name, name, error, &saved, record, matmul_backward);
}
