// descriptor.c: the rms_norm_gated op descriptor (ops/op_descriptor.h).
//   slots: x (N, D), gate (N, D), weight (D) -> y (N, D); attributes: parity_rms_norm_gated_args (eps)
//   work (ROWSxDIM): forward reads x, gate and w and writes y; backward reads x, gate, dy and w and writes
//   dx, dgate and dw
#include "ops/registry.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(rms_norm_gated, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(rms_norm_gated, "gate", PARITY_SLOT_INPUT, gate, dgate),
    PARITY_OP_SLOT(rms_norm_gated, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT(rms_norm_gated, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], d = (double)sizes[1], size = (double)parity_dtype_size(dtype);
    double forward = (3 * n * d + d) * size, backward = (5 * n * d + 2 * d) * size;
    return with_backward ? forward + backward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(2 * sizes[0] * sizes[1] + sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxDIM", 2, false, bytes, NULL, gradient_bytes};

PARITY_OP_DESCRIPTOR(rms_norm_gated, PARITY_OP_RMS_NORM_GATED, PARITY_OP_ARGS_ATTRIBUTES(rms_norm_gated), .work = &work)
