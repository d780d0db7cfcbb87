// descriptor.c: the rms_norm op descriptor (ops/op_descriptor.h).
//   slots: x (N, H), weight (H) -> y (N, H); attributes: parity_rms_norm_args (eps, variant)
//   work (ROWSxHIDDEN): forward reads x and w and writes y; backward reads x, dy and w and writes dx and dw
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(rms_norm, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(rms_norm, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT(rms_norm, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], h = (double)sizes[1], size = (double)parity_dtype_size(dtype);
    double forward = (2 * n * h + h) * size, backward = (3 * n * h + 2 * h) * size;
    return with_backward ? forward + backward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * sizes[1] + sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxHIDDEN", 2, false, bytes, NULL, gradient_bytes};

PARITY_OP_DESCRIPTOR(rms_norm, PARITY_OP_RMS_NORM, PARITY_OP_ARGS_ATTRIBUTES(rms_norm), .work = &work)
