// node_op.h: the one node function behind every registry op on the tape. The op's node function
// (models/autograd/nodes/) makes the output variables and hands every tensor of the call, by the
// op's slots (ops/op_descriptor.h), to parity_node_op, which runs the backend's forward through the
// op descriptor and records a node whose backward opens a gradient slot (gradient_slot.h) for each
// differentiable input, calls the backend's backward through the descriptor, and adds the gradients in.
#ifndef PARITY_NODE_OP_H
#define PARITY_NODE_OP_H

#include "models/autograd/tape.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"

// One tensor of the call, by slot: a variable for INPUT and OUTPUT slots (NULL: an optional slot left
// empty), e.g. {input}; a plain tensor for DATA slots (ids, targets, positions, cu_seqlens), e.g.
// {.tensor = ids}, kept as a view until backward: its storage must outlive the tape's backward.
typedef union parity_node_operand {
    parity_variable *variable;
    const parity_tensor *tensor;
} parity_node_operand;

// Runs `backend`'s forward of `op` on `operands` (op->slot_count of them) with `attributes` (copied
// into the node: op->attributes_size bytes) and records the node for backward. A forward error is
// returned with "<name>: <op> (<backend>)" context.
parity_error *parity_node_op(parity_tape *tape, const parity_op_descriptor *op, const parity_backend *backend,
                             const char *name, const void *attributes, const parity_node_operand *operands);

// An output variable shaped and typed like `like`.
parity_error *parity_node_output_like(parity_tape *tape, const char *name, const parity_variable *like,
                                      bool requires_gradient, parity_variable **out);

#endif
