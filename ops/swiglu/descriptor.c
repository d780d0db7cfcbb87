// descriptor.c: the swiglu op descriptor (ops/op_descriptor.h).
//   slots: gate (N, I), up (N, I) -> y (N, I); no attributes
//   work (ROWSxINTERMEDIATE): forward reads gate and up and writes y; backward reads gate, up and dy and
//   writes dgate and dup
#include "ops/registry.h"
#include "ops/swiglu/swiglu.h"

enum { GATE, UP, Y };

static const parity_op_slot slots[] = {
    [GATE] = {"gate", PARITY_SLOT_INPUT, false},
    [UP] = {"up", PARITY_SLOT_INPUT, false},
    [Y] = {"y", PARITY_SLOT_OUTPUT, false},
};

static parity_swiglu_args args_of(const void *attributes, parity_tensor *const *tensors) {
    return (parity_swiglu_args){tensors[GATE], tensors[UP], tensors[Y]};
}

static parity_swiglu_grads grads_of(parity_tensor *const *gradients, parity_swiglu_args *args) {
    return (parity_swiglu_grads){gradients[Y], gradients[GATE], gradients[UP]};
}

PARITY_OP_KERNEL_CALLS(swiglu)

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double elements = (double)sizes[0] * (double)sizes[1];
    return (with_backward ? 8 : 3) * elements * (double)parity_dtype_size(dtype);
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    return 2.0 * (double)(sizes[0] * sizes[1]) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"ROWSxINTERMEDIATE", 2, false, bytes, NULL, gradient_bytes};

const parity_op_descriptor parity_swiglu_op = {
    .name = PARITY_OP_SWIGLU, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward, .work = &work,
};
