// descriptor.c: the causal_conv1d op descriptor (ops/op_descriptor.h).
//   slots: x (N, C), weight (C, K), cu_seqlens (S + 1) int64 or NULL (data) -> y (N, C);
//   attributes: parity_causal_conv1d_args (activation)
#include "ops/registry.h"
#include "ops/causal_conv1d/causal_conv1d.h"

enum { X, WEIGHT, CU_SEQLENS, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [CU_SEQLENS] = {"cu_seqlens", PARITY_SLOT_DATA, true},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_causal_conv1d_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_causal_conv1d_args args = *(const parity_causal_conv1d_args *)attributes;
    args.input = tensors[X];
    args.weight = tensors[WEIGHT];
    args.cu_seqlens = tensors[CU_SEQLENS];
    args.output = tensors[Y];
    return args;
}

static parity_causal_conv1d_grads grads_of(parity_tensor *const *gradients, parity_causal_conv1d_args *args) {
    return (parity_causal_conv1d_grads){gradients[Y], gradients[X], gradients[WEIGHT]};
}

PARITY_OP_KERNEL_CALLS(causal_conv1d)

const parity_op_descriptor parity_causal_conv1d_op = {
    .name = PARITY_OP_CAUSAL_CONV1D, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_causal_conv1d_args), .forward = kernel_forward, .backward = kernel_backward,
};
