// descriptor.c: the matmul op descriptor (ops/op_descriptor.h).
//   slots: a (batch, M, K), b (batch, K, N) -> c (batch, M, N);
//   attributes: parity_matmul_args (transpose_a, transpose_b)
#include "ops/registry.h"
#include "ops/matmul/matmul.h"

enum { A, B, C };

static const parity_op_slot slots[] = {
    [A] = {"a", PARITY_SLOT_INPUT, false},
    [B] = {"b", PARITY_SLOT_INPUT, false},
    [C] = {"c", PARITY_SLOT_OUTPUT, false},
};

static parity_matmul_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_matmul_args args = *(const parity_matmul_args *)attributes;
    args.a = tensors[A];
    args.b = tensors[B];
    args.output = tensors[C];
    return args;
}

static parity_matmul_grads grads_of(parity_tensor *const *gradients, parity_matmul_args *args) {
    return (parity_matmul_grads){gradients[C], gradients[A], gradients[B]};
}

PARITY_OP_KERNEL_CALLS(matmul)

const parity_op_descriptor parity_matmul_op = {
    .name = PARITY_OP_MATMUL, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_matmul_args), .forward = kernel_forward, .backward = kernel_backward,
};
