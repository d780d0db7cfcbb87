// descriptor.c: the causal_conv1d op descriptor (ops/op_descriptor.h).
//   slots: x (N, C), weight (C, K), cu_seqlens (S + 1) int64 or NULL (data) -> y (N, C); attributes:
//          parity_causal_conv1d_args (activation)
//   work (TOKENSxCHANNELSxKERNEL, one document): forward reads x and the weight and writes y; backward
//   reads x, dy and the weight and writes dx and dweight (a backend that recomputes the conv output
//   moves no more; eager's saved pre-activation is extra)
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(causal_conv1d, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(causal_conv1d, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(causal_conv1d, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens, .optional = true),
    PARITY_OP_SLOT(causal_conv1d, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double activations = (double)sizes[0] * (double)sizes[1], weights = (double)sizes[1] * (double)sizes[2];
    double size = (double)parity_dtype_size(dtype);
    double forward = (2 * activations + weights) * size, backward = (3 * activations + 2 * weights) * size;
    return with_backward ? forward + backward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return ((double)sizes[0] * (double)sizes[1] + (double)sizes[1] * (double)sizes[2]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"TOKENSxCHANNELSxKERNEL", 3, false, bytes, NULL, gradient_bytes};

PARITY_OP_DESCRIPTOR(causal_conv1d, PARITY_OP_CAUSAL_CONV1D, PARITY_OP_ARGS_ATTRIBUTES(causal_conv1d), .work = &work)
