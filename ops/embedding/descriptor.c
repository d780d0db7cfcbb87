// descriptor.c: the embedding op descriptor (ops/op_descriptor.h).
//   slots: ids (N) int64 (data), weight (V, H) -> y (N, H);
//   attributes: parity_embedding_args (has_padding_idx, padding_idx)
#include "ops/registry.h"
#include "ops/embedding/embedding.h"

enum { IDS, WEIGHT, Y };

static const parity_op_slot slots[] = {
    [IDS] = {"ids", PARITY_SLOT_DATA, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_embedding_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_embedding_args args = *(const parity_embedding_args *)attributes;
    args.ids = tensors[IDS];
    args.weight = tensors[WEIGHT];
    args.output = tensors[Y];
    return args;
}

static parity_embedding_grads grads_of(parity_tensor *const *gradients, parity_embedding_args *args) {
    return (parity_embedding_grads){gradients[Y], gradients[WEIGHT]};
}

PARITY_OP_KERNEL_CALLS(embedding)

const parity_op_descriptor parity_embedding_op = {
    .name = PARITY_OP_EMBEDDING, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_embedding_args), .forward = kernel_forward, .backward = kernel_backward,
};
