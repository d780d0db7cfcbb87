// descriptor.c: the linear op descriptor (ops/op_descriptor.h).
//   slots: x (N, in), weight (out, in), bias (out) or NULL -> y (N, out); no attributes
#include "ops/registry.h"
#include "ops/linear/linear.h"

enum { X, WEIGHT, BIAS, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [BIAS] = {"bias", PARITY_SLOT_INPUT, true},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_linear_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_linear_args args = {0};
    args.input = tensors[X];
    args.weight = tensors[WEIGHT];
    args.bias = tensors[BIAS];
    args.output = tensors[Y];
    return args;
}

static parity_linear_grads grads_of(parity_tensor *const *gradients, parity_linear_args *args) {
    return (parity_linear_grads){gradients[Y], gradients[X], gradients[WEIGHT], gradients[BIAS]};
}

PARITY_OP_KERNEL_CALLS(linear)

const parity_op_descriptor parity_linear_op = {
    .name = PARITY_OP_LINEAR, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward,
};
