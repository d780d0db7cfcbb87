// descriptor.c: the l2_norm op descriptor (ops/op_descriptor.h).
//   slots: x (N, D) -> y (N, D); attributes: parity_l2_norm_args (eps)
#include "ops/registry.h"
#include "ops/l2_norm/l2_norm.h"

enum { X, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_l2_norm_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_l2_norm_args args = *(const parity_l2_norm_args *)attributes;
    args.input = tensors[X];
    args.output = tensors[Y];
    return args;
}

static parity_l2_norm_grads grads_of(parity_tensor *const *gradients, parity_l2_norm_args *args) {
    return (parity_l2_norm_grads){gradients[Y], gradients[X]};
}

PARITY_OP_KERNEL_CALLS(l2_norm)

const parity_op_descriptor parity_l2_norm_op = {
    .name = PARITY_OP_L2_NORM, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_l2_norm_args), .forward = kernel_forward, .backward = kernel_backward,
};
