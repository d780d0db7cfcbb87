// descriptor.c: the sigmoid_gate op descriptor (ops/op_descriptor.h).
//   slots: x (N, D), gate (N, D) or (N, 1) -> y (N, D); no attributes
#include "ops/registry.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"

enum { X, GATE, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [GATE] = {"gate", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_sigmoid_gate_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_sigmoid_gate_args args = {0};
    args.input = tensors[X];
    args.gate = tensors[GATE];
    args.output = tensors[Y];
    return args;
}

static parity_sigmoid_gate_grads grads_of(parity_tensor *const *gradients, parity_sigmoid_gate_args *args) {
    return (parity_sigmoid_gate_grads){gradients[Y], gradients[X], gradients[GATE]};
}

PARITY_OP_KERNEL_CALLS(sigmoid_gate)

const parity_op_descriptor parity_sigmoid_gate_op = {
    .name = PARITY_OP_SIGMOID_GATE, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward,
};
