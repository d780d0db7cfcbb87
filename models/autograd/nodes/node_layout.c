// node_layout.c: the ops that move data on the tape: concatenation and splitting along the last
// dimension (a variable may appear twice among the parts; split parts that receive no gradient are
// passed to the op's backward as NULL, which it reads as zeros) and one head broadcast to every head,
// (N, 1, D) -> (N, H, D).
#include <stdio.h>
#include <string.h>

#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

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
    parity_node_operand operands[PARITY_CONCAT_MAX_PARTS + 1] = {0};
    for (int i = 0; i < count; i++) operands[i].variable = parts[i];
    operands[PARITY_CONCAT_MAX_PARTS].variable = *out;
    parity_concat_args attributes = {.count = count};
    return parity_node_op(tape, &parity_concat_op, backend, name, &attributes, operands);
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
    parity_node_operand operands[PARITY_SPLIT_MAX_PARTS + 1] = {{input}};
    for (int i = 0; i < count; i++) {
        char part_name[128];
        snprintf(part_name, sizeof part_name, "%s (part %d)", name, i);
        shape[ndim - 1] = sizes[i];
        PARITY_TRY(parity_tape_new_variable(tape, part_name, input->value.dtype, ndim, shape, input->requires_gradient,
                                            &parts[i]));
        operands[1 + i].variable = parts[i];
    }
    parity_split_args attributes = {.count = count};
    return parity_node_op(tape, &parity_split_op, backend, name, &attributes, operands);
}

parity_error *parity_node_broadcast_heads(parity_tape *tape, const parity_backend *backend, const char *name,
                                          parity_variable *input, int64_t heads, parity_variable **out) {
    int ndim = input->value.ndim;
    PARITY_CHECK(ndim >= 2, PARITY_ERROR_SHAPE, "%s: broadcast_heads (%s): input has rank %d, expected (N, 1, D)", name,
                 backend->name, ndim);
    // (N, H, D): the input's shape with `heads` in place of its single head
    int64_t shape[PARITY_MAX_DIMS];
    memcpy(shape, input->value.shape, sizeof shape);
    shape[ndim - 2] = heads;
    PARITY_TRY(parity_tape_new_variable(tape, name, input->value.dtype, ndim, shape, input->requires_gradient, out));
    return parity_node_op(tape, &parity_broadcast_heads_op, backend, name, NULL, (parity_node_operand[]){{input}, {*out}});
}
