// descriptor.c: the rotary op descriptor (ops/op_descriptor.h).
//   slots: query (N, Hq, D), key (N, Hk, D), positions (N) int64 (data) -> query_out (N, Hq, D), key_out
//   (N, Hk, D); attributes: the parity_rope_description (args.rope points at the caller's copy). The
//   backward reads both incoming gradients (zeros for an output that received none).
//   work (TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM): each way reads q and k (and the positions) and writes
//   the rotated q and k
#include "ops/registry.h"
#include "ops/rotary/rotary.h"

enum { QUERY, KEY, POSITIONS, QUERY_OUT, KEY_OUT };

static const parity_op_slot slots[] = {
    [QUERY] = {"query", PARITY_SLOT_INPUT, false},
    [KEY] = {"key", PARITY_SLOT_INPUT, false},
    [POSITIONS] = {"positions", PARITY_SLOT_DATA, false},
    [QUERY_OUT] = {"query_out", PARITY_SLOT_OUTPUT, false},
    [KEY_OUT] = {"key_out", PARITY_SLOT_OUTPUT, false},
};

static parity_rotary_args args_of(const void *attributes, parity_tensor *const *tensors) {
    return (parity_rotary_args){tensors[QUERY], tensors[KEY], tensors[POSITIONS], attributes, tensors[QUERY_OUT],
                                tensors[KEY_OUT]};
}

static parity_rotary_grads grads_of(parity_tensor *const *gradients, parity_rotary_args *args) {
    return (parity_rotary_grads){gradients[QUERY_OUT], gradients[KEY_OUT], gradients[QUERY], gradients[KEY]};
}

PARITY_OP_KERNEL_CALLS(rotary)

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double tokens = (double)sizes[0], heads = (double)(sizes[1] + sizes[2]), d = (double)sizes[3];
    double one_way = 2 * tokens * heads * d * (double)parity_dtype_size(dtype) + tokens * 8;
    return with_backward ? 2 * one_way : one_way;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return (double)(sizes[0] * (sizes[1] + sizes[2]) * sizes[3]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM", 4, false, bytes, NULL, gradient_bytes};

const parity_op_descriptor parity_rotary_op = {
    .name = PARITY_OP_ROTARY, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_rope_description), .needs_every_output_gradient = true,
    .forward = kernel_forward, .backward = kernel_backward, .work = &work,
};
