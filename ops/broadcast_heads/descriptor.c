// descriptor.c: the broadcast_heads op descriptor (ops/op_descriptor.h).
//   slots: x (N, 1, D) -> y (N, H, D); no attributes (H is y's)
#include "ops/registry.h"
#include "ops/broadcast_heads/broadcast_heads.h"

enum { X, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_broadcast_heads_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_broadcast_heads_args args = {0};
    args.input = tensors[X];
    args.output = tensors[Y];
    return args;
}

static parity_broadcast_heads_grads grads_of(parity_tensor *const *gradients, parity_broadcast_heads_args *args) {
    return (parity_broadcast_heads_grads){gradients[Y], gradients[X]};
}

PARITY_OP_KERNEL_CALLS(broadcast_heads)

const parity_op_descriptor parity_broadcast_heads_op = {
    .name = PARITY_OP_BROADCAST_HEADS, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward,
};
