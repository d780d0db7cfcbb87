// node_op.c: the generic op node (see node_op.h).
#include "models/autograd/node_op.h"

#include <stdlib.h>
#include <string.h>

#include "models/autograd/gradient_slot.h"

enum { MAX_DATA_SLOTS = 2 }; // views kept per node; every op has at most one DATA slot today

typedef struct op_record {
    const parity_op_descriptor *op;
    const void *kernels;
    parity_variable *variables[PARITY_OP_MAX_SLOTS]; // INPUT and OUTPUT slots
    parity_tensor *tensors[PARITY_OP_MAX_SLOTS];     // what the args builder reads, by slot
    parity_tensor views[MAX_DATA_SLOTS];             // DATA slots' tensors
    max_align_t attributes[];                        // op->attributes_size bytes
} op_record;

// The op's backward: incoming gradients of the outputs (zeros where the op needs every one and an
// output received none), a gradient slot per differentiable input, then the backend's backward.
static parity_error *op_backward(parity_tape *tape, parity_node *node) {
    op_record *record = node->data;
    const parity_op_descriptor *op = record->op;
    parity_tensor *gradients[PARITY_OP_MAX_SLOTS] = {0};
    bool incoming = false;
    for (int i = 0; i < op->slot_count; i++) {
        parity_variable *output = record->variables[i];
        if (op->slots[i].kind != PARITY_SLOT_OUTPUT || !output || !output->has_gradient) continue;
        gradients[i] = &output->gradient;
        incoming = true;
    }
    if (!incoming) return NULL;
    parity_error *error = NULL;
    parity_tensor zeros[PARITY_OP_MAX_SLOTS];
    memset(zeros, 0, sizeof zeros);
    for (int i = 0; i < op->slot_count && op->needs_every_output_gradient && !error; i++) {
        const parity_variable *output = record->variables[i];
        if (op->slots[i].kind != PARITY_SLOT_OUTPUT || !output || gradients[i]) continue;
        error = parity_tensor_zeros(&zeros[i], output->value.dtype, output->value.device, output->value.ndim,
                                    output->value.shape);
        gradients[i] = &zeros[i];
    }
    parity_gradient_slot slots[PARITY_OP_MAX_SLOTS];
    memset(slots, 0, sizeof slots);
    bool wanted = false;
    for (int i = 0; i < op->slot_count && !error; i++) {
        if (op->slots[i].kind != PARITY_SLOT_INPUT) continue;
        error = parity_gradient_slot_open(&slots[i], record->variables[i]);
        gradients[i] = slots[i].target;
        wanted = wanted || slots[i].target;
    }
    if (!error && wanted) error = op->backward(tape->exec, record->kernels, record->attributes, record->tensors, gradients, &node->saved);
    for (int i = 0; i < op->slot_count; i++) {
        if (op->slots[i].kind != PARITY_SLOT_INPUT) continue;
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    for (int i = 0; i < op->slot_count; i++) parity_tensor_release(&zeros[i]);
    return error;
}

parity_error *parity_node_op(parity_tape *tape, const parity_op_descriptor *op, const parity_backend *backend,
                             const char *name, const void *attributes, const parity_node_operand *operands) {
    PARITY_CHECK(op->slot_count <= PARITY_OP_MAX_SLOTS && (attributes || !op->attributes_size), PARITY_ERROR_INTERNAL,
                 "%s: %s: %d slots (at most %d), attributes %s", name, op->name, op->slot_count, PARITY_OP_MAX_SLOTS,
                 attributes ? "given" : "missing");
    op_record *record = calloc(1, sizeof *record + op->attributes_size);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording %s", op->name);
    record->op = op;
    record->kernels = backend->kernels;
    if (op->attributes_size) memcpy(record->attributes, attributes, op->attributes_size);
    int views = 0;
    parity_error *error = NULL;
    for (int i = 0; i < op->slot_count && !error; i++) {
        const parity_op_slot *slot = &op->slots[i];
        if (slot->kind != PARITY_SLOT_DATA) {
            record->variables[i] = operands[i].variable;
            record->tensors[i] = operands[i].variable ? &operands[i].variable->value : NULL;
        } else if (operands[i].tensor && views < MAX_DATA_SLOTS) {
            record->views[views] = *operands[i].tensor;
            record->views[views].owns_data = false;
            record->views[views].allocated_bytes = 0;
            record->tensors[i] = &record->views[views++];
        } else if (operands[i].tensor) {
            error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: %s has more than %d data slots", name, op->name, MAX_DATA_SLOTS);
        }
        if (!error && !record->tensors[i] && !slot->optional)
            error = PARITY_ERROR(PARITY_ERROR_USAGE, "%s: %s (%s): no %s given", name, op->name, backend->name, slot->name);
    }
    if (error) {
        free(record);
        return error;
    }
    parity_saved saved = {0};
    error = op->forward(tape->exec, record->kernels, record->attributes, record->tensors, &saved);
    return parity_tape_record(tape, op->name, backend->name, name, error, &saved, record, op_backward);
}

parity_error *parity_node_output_like(parity_tape *tape, const char *name, const parity_variable *like,
                                      bool requires_gradient, parity_variable **out) {
    return parity_tape_new_variable(tape, name, like->value.dtype, like->value.ndim, like->value.shape, requires_gradient,
                                    out);
}
