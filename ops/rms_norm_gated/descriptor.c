// descriptor.c: the rms_norm_gated op descriptor (ops/op_descriptor.h).
//   slots: x (N, D), gate (N, D), weight (D) -> y (N, D); attributes: parity_rms_norm_gated_args (eps)
//   work (ROWSxDIM): forward reads x, gate and w and writes y; backward reads x, gate, dy and w and writes
//   dx, dgate and dw
#include "ops/registry.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"

enum { X, GATE, WEIGHT, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [GATE] = {"gate", PARITY_SLOT_INPUT, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_rms_norm_gated_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_rms_norm_gated_args args = *(const parity_rms_norm_gated_args *)attributes;
    args.input = tensors[X];
    args.gate = tensors[GATE];
    args.weight = tensors[WEIGHT];
    args.output = tensors[Y];
    return args;
}

static parity_rms_norm_gated_grads grads_of(parity_tensor *const *gradients, parity_rms_norm_gated_args *args) {
    return (parity_rms_norm_gated_grads){gradients[Y], gradients[X], gradients[GATE], gradients[WEIGHT]};
}

PARITY_OP_KERNEL_CALLS(rms_norm_gated)

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], d = (double)sizes[1], size = (double)parity_dtype_size(dtype);
    double forward = (3 * n * d + d) * size, backward = (5 * n * d + 2 * d) * size;
    return with_backward ? forward + backward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(2 * sizes[0] * sizes[1] + sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxDIM", 2, false, bytes, NULL, gradient_bytes};

const parity_op_descriptor parity_rms_norm_gated_op = {
    .name = PARITY_OP_RMS_NORM_GATED, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_rms_norm_gated_args), .forward = kernel_forward, .backward = kernel_backward,
    .work = &work,
};
