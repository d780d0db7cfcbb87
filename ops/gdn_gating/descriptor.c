// descriptor.c: the gdn_gating op descriptor (ops/op_descriptor.h).
//   slots: a, b (N, Hv), A_log, dt_bias (Hv) -> g (N, Hv, compute dtype), beta (N, Hv); no attributes.
//   The backward reads both incoming gradients (zeros for an output that received none).
#include "ops/registry.h"
#include "ops/gdn_gating/gdn_gating.h"

enum { A, B, A_LOG, DT_BIAS, G, BETA };

static const parity_op_slot slots[] = {
    [A] = {"a", PARITY_SLOT_INPUT, false},
    [B] = {"b", PARITY_SLOT_INPUT, false},
    [A_LOG] = {"A_log", PARITY_SLOT_INPUT, false},
    [DT_BIAS] = {"dt_bias", PARITY_SLOT_INPUT, false},
    [G] = {"g", PARITY_SLOT_OUTPUT, false},
    [BETA] = {"beta", PARITY_SLOT_OUTPUT, false},
};

static parity_gdn_gating_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_gdn_gating_args args = {0};
    args.a = tensors[A];
    args.b = tensors[B];
    args.A_log = tensors[A_LOG];
    args.dt_bias = tensors[DT_BIAS];
    args.g = tensors[G];
    args.beta = tensors[BETA];
    return args;
}

static parity_gdn_gating_grads grads_of(parity_tensor *const *gradients, parity_gdn_gating_args *args) {
    return (parity_gdn_gating_grads){gradients[G], gradients[BETA], gradients[A],
                                     gradients[B], gradients[A_LOG], gradients[DT_BIAS]};
}

PARITY_OP_KERNEL_CALLS(gdn_gating)

const parity_op_descriptor parity_gdn_gating_op = {
    .name = PARITY_OP_GDN_GATING, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .needs_every_output_gradient = true, .forward = kernel_forward, .backward = kernel_backward,
};
