// node_dense.c: the dense ops on the tape: the layer y = x W^T + b, the batched C = op(A) op(B) and
// the token embedding lookup (ids are data, only the table is differentiated).
#include <string.h>

#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_linear(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                 parity_variable *weight, parity_variable *bias, parity_variable **out) {
    PARITY_CHECK(input->value.ndim >= 1 && weight->value.ndim == 2, PARITY_ERROR_SHAPE,
                 "%s: linear (%s): input has rank %d and weight rank %d, expected (..., in) and (out, in)", name,
                 backend->name, input->value.ndim, weight->value.ndim);
    // (..., out): the input's leading shape
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, input->value.shape, sizeof shape);
    shape[input->value.ndim - 1] = weight->value.shape[0];
    bool needs_gradient = input->requires_gradient || weight->requires_gradient || (bias && bias->requires_gradient);
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, input->value.ndim, shape, needs_gradient, out));
    return parity_node_op(tape, &parity_linear_op, backend, name, NULL,
                          (parity_node_operand[]){{input}, {weight}, {bias}, {*out}});
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
    parity_matmul_args attributes = {.transpose_a = transpose_a, .transpose_b = transpose_b};
    return parity_node_op(tape, &parity_matmul_op, backend, name, &attributes, (parity_node_operand[]){{a}, {b}, {*out}});
}

parity_error *parity_node_embedding(parity_tape *tape, const parity_backend *backend, const char *name,
                                    const parity_tensor *ids, parity_variable *weight, int64_t padding_idx,
                                    parity_variable **out) {
    PARITY_CHECK(ids && ids->ndim < PARITY_MAX_DIMS && weight->value.ndim == 2, PARITY_ERROR_SHAPE,
                 "%s: embedding (%s): ids have rank %d and weight rank %d, expected ids of rank < %d and (V, H)", name,
                 backend->name, ids ? ids->ndim : -1, weight->value.ndim, PARITY_MAX_DIMS);
    // (ids' shape, H)
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, ids->shape, sizeof shape);
    shape[ids->ndim] = weight->value.shape[1];
    PARITY_TRY(parity_tape_new_variable(tape, name, weight->value.dtype, ids->ndim + 1, shape, weight->requires_gradient, out));
    parity_embedding_args attributes = {.has_padding_idx = padding_idx >= 0, .padding_idx = padding_idx};
    return parity_node_op(tape, &parity_embedding_op, backend, name, &attributes,
                          (parity_node_operand[]){{.tensor = ids}, {weight}, {*out}});
}
