// descriptor.c: the concat op descriptor (ops/op_descriptor.h).
//   slots: part0 .. part7 (N, D_i), the first `count` of them -> y (N, D_0 + D_1 + ...);
//   attributes: parity_concat_args (count)
#include "ops/concat/concat.h"
#include "ops/registry.h"

enum { Y = PARITY_CONCAT_MAX_PARTS };

static const parity_op_slot slots[] = {
    {"part0", PARITY_SLOT_INPUT, true}, {"part1", PARITY_SLOT_INPUT, true}, {"part2", PARITY_SLOT_INPUT, true},
    {"part3", PARITY_SLOT_INPUT, true}, {"part4", PARITY_SLOT_INPUT, true}, {"part5", PARITY_SLOT_INPUT, true},
    {"part6", PARITY_SLOT_INPUT, true}, {"part7", PARITY_SLOT_INPUT, true}, [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};
_Static_assert(PARITY_CONCAT_MAX_PARTS == 8, "one slot per part");

static parity_concat_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_concat_args args = *(const parity_concat_args *)attributes;
    for (int i = 0; i < PARITY_CONCAT_MAX_PARTS; i++) args.parts[i] = i < args.count ? tensors[i] : NULL;
    args.output = tensors[Y];
    return args;
}

static parity_concat_grads grads_of(parity_tensor *const *gradients, parity_concat_args *args) {
    parity_concat_grads grads = {.doutput = gradients[Y]};
    for (int i = 0; i < args->count && i < PARITY_CONCAT_MAX_PARTS; i++) grads.dparts[i] = gradients[i];
    return grads;
}

PARITY_OP_KERNEL_CALLS(concat)

const parity_op_descriptor parity_concat_op = {
    .name = PARITY_OP_CONCAT, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_concat_args), .forward = kernel_forward, .backward = kernel_backward,
};
