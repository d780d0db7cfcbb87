// descriptor.c: the rms_norm op descriptor (ops/op_descriptor.h).
//   slots: x (N, H), weight (H) -> y (N, H); attributes: parity_rms_norm_args (eps, variant)
//   work (ROWSxHIDDEN): forward reads x and w and writes y; backward reads x, dy and w and writes dx and dw
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"

enum { X, WEIGHT, Y };

static const parity_op_slot slots[] = {
    [X] = {"x", PARITY_SLOT_INPUT, false},
    [WEIGHT] = {"weight", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_rms_norm_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_rms_norm_args args = *(const parity_rms_norm_args *)attributes;
    args.input = tensors[X];
    args.weight = tensors[WEIGHT];
    args.output = tensors[Y];
    return args;
}

static parity_rms_norm_grads grads_of(parity_tensor *const *gradients, parity_rms_norm_args *args) {
    return (parity_rms_norm_grads){gradients[Y], gradients[X], gradients[WEIGHT]};
}

PARITY_OP_KERNEL_CALLS(rms_norm)

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], h = (double)sizes[1], size = (double)parity_dtype_size(dtype);
    double forward = (2 * n * h + h) * size, backward = (3 * n * h + 2 * h) * size;
    return with_backward ? forward + backward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * sizes[1] + sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxHIDDEN", 2, false, bytes, NULL, gradient_bytes};

const parity_op_descriptor parity_rms_norm_op = {
    .name = PARITY_OP_RMS_NORM, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_rms_norm_args), .forward = kernel_forward, .backward = kernel_backward,
    .work = &work,
};
