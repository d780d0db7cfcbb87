// descriptor.c: the cross_entropy op descriptor (ops/op_descriptor.h).
//   slots: hidden (N, H), weight (V, H), targets (N) int64 (data) -> loss (), logits (N, V) or NULL (not
//          differentiated; the backward gets NULL there: no backend reads the logits); attributes:
//          parity_cross_entropy_args (ignore_index, num_items_in_batch, chunk_size, valid_count)
//   work (TOKENSxHIDDENxVOCAB, linear + cross-entropy): the three GEMMs of N x H x V (logits, dhidden,
//   dweight; forward alone: the logits); bytes: the minimum, read hidden and weight, write dhidden and dweight
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(cross_entropy, "hidden", PARITY_SLOT_INPUT, hidden, dhidden),
    PARITY_OP_SLOT(cross_entropy, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(cross_entropy, "targets", PARITY_SLOT_DATA, targets),
    PARITY_OP_SLOT(cross_entropy, "loss", PARITY_SLOT_OUTPUT, loss, dloss),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(cross_entropy, "logits", PARITY_SLOT_OUTPUT, logits, .optional = true,
                                    .forward_only = true),
};

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

PARITY_OP_DESCRIPTOR(cross_entropy, PARITY_OP_CROSS_ENTROPY, PARITY_OP_ARGS_ATTRIBUTES(cross_entropy), .work = &work)
