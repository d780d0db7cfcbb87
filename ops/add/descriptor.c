// descriptor.c: the add op descriptor (ops/op_descriptor.h).
//   slots: a, b -> y (any shape, all alike); no attributes
#include "ops/registry.h"
#include "ops/add/add.h"

enum { A, B, Y };

static const parity_op_slot slots[] = {
    [A] = {"a", PARITY_SLOT_INPUT, false},
    [B] = {"b", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_add_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_add_args args = {0};
    args.a = tensors[A];
    args.b = tensors[B];
    args.output = tensors[Y];
    return args;
}

static parity_add_grads grads_of(parity_tensor *const *gradients, parity_add_args *args) {
    return (parity_add_grads){gradients[Y], gradients[A], gradients[B]};
}

PARITY_OP_KERNEL_CALLS(add)

const parity_op_descriptor parity_add_op = {
    .name = PARITY_OP_ADD, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward,
};
