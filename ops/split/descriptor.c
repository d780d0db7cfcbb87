// descriptor.c: the split op descriptor (ops/op_descriptor.h).
//   slots: x (N, D) -> part0 .. part7 (N, D_i), the first `count` of them (a part with no incoming
//   gradient is passed as NULL: the op reads zeros); attributes: parity_split_args (count)
#include "ops/registry.h"
#include "ops/split/split.h"

enum { X, FIRST_PART };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    {"part0", PARITY_SLOT_OUTPUT, true}, {"part1", PARITY_SLOT_OUTPUT, true}, {"part2", PARITY_SLOT_OUTPUT, true},
    {"part3", PARITY_SLOT_OUTPUT, true}, {"part4", PARITY_SLOT_OUTPUT, true}, {"part5", PARITY_SLOT_OUTPUT, true},
    {"part6", PARITY_SLOT_OUTPUT, true}, {"part7", PARITY_SLOT_OUTPUT, true},
};
_Static_assert(PARITY_SPLIT_MAX_PARTS == 8, "one slot per part");

static parity_split_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_split_args args = *(const parity_split_args *)attributes;
    args.input = tensors[X];
    for (int i = 0; i < PARITY_SPLIT_MAX_PARTS; i++) args.parts[i] = i < args.count ? tensors[FIRST_PART + i] : NULL;
    return args;
}

static parity_split_grads grads_of(parity_tensor *const *gradients, parity_split_args *args) {
    parity_split_grads grads = {.dinput = gradients[X]};
    for (int i = 0; i < args->count && i < PARITY_SPLIT_MAX_PARTS; i++) grads.dparts[i] = gradients[FIRST_PART + i];
    return grads;
}

PARITY_OP_KERNEL_CALLS(split)

const parity_op_descriptor parity_split_op = {
    .name = PARITY_OP_SPLIT, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_split_args), .forward = kernel_forward, .backward = kernel_backward,
};
