// descriptor.c: the cross_entropy op descriptor (ops/op_descriptor.h).
//   slots: hidden (N, H), weight (V, H), targets (N) int64 (data) -> loss (), logits (N, V) or NULL (no
//   gradient); attributes: parity_cross_entropy_args (ignore_index, num_items_in_batch, chunk_size,
//   valid_count). The backward is called without the logits (no backend reads them there).
//   work (TOKENSxHIDDENxVOCAB, linear + cross-entropy): the three GEMMs of N x H x V (logits, dhidden,
//   dweight; forward alone: the logits); bytes: the minimum, read hidden and weight, write dhidden and dweight
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/registry.h"

enum { HIDDEN, WEIGHT, TARGETS, LOSS, LOGITS };

static const parity_op_slot slots[] = {
    [HIDDEN] = {"hidden", PARITY_SLOT_INPUT, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [TARGETS] = {"targets", PARITY_SLOT_DATA, false},
    [LOSS] = {"loss", PARITY_SLOT_OUTPUT, false},
    [LOGITS] = {"logits", PARITY_SLOT_OUTPUT, true},
};

static parity_cross_entropy_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_cross_entropy_args args = *(const parity_cross_entropy_args *)attributes;
    args.hidden = tensors[HIDDEN];
    args.weight = tensors[WEIGHT];
    args.targets = tensors[TARGETS];
    args.loss = tensors[LOSS];
    args.logits = tensors[LOGITS];
    return args;
}

static parity_cross_entropy_grads grads_of(parity_tensor *const *gradients, parity_cross_entropy_args *args) {
    args->logits = NULL;
    return (parity_cross_entropy_grads){gradients[LOSS], gradients[HIDDEN], gradients[WEIGHT]};
}

PARITY_OP_KERNEL_CALLS(cross_entropy)

static double flops(const int64_t *sizes, bool with_backward) {
    double n = (double)sizes[0], h = (double)sizes[1], v = (double)sizes[2];
    return (with_backward ? 6 : 2) * n * h * v;
}

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], h = (double)sizes[1], v = (double)sizes[2];
    return (with_backward ? 2 : 1) * (n * h + v * h) * (double)parity_dtype_size(dtype);
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] + sizes[2]) * (double)sizes[1] * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"TOKENSxHIDDENxVOCAB", 3, true, bytes, flops, gradient_bytes};

const parity_op_descriptor parity_cross_entropy_op = {
    .name = PARITY_OP_CROSS_ENTROPY, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_cross_entropy_args), .forward = kernel_forward, .backward = kernel_backward,
    .work = &work,
};
