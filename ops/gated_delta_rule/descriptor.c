// descriptor.c: the gated_delta_rule op descriptor (ops/op_descriptor.h).
//   slots: query, key (N, Hk, Dk), value (N, Hv, Dv), g, beta (N, Hv), cu_seqlens (S + 1) int64 or
//          NULL (data) -> output (N, Hv, Dv); attributes: parity_gated_delta_rule_args (scale,
//          use_qk_l2norm, chunk_size)
#include "ops/registry.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"

enum { QUERY, KEY, VALUE, G, BETA, CU_SEQLENS, OUTPUT };

static const parity_op_slot slots[] = {
    [QUERY] = {"query", PARITY_SLOT_INPUT, false},
    [KEY] = {"key", PARITY_SLOT_INPUT, false},
    [VALUE] = {"value", PARITY_SLOT_INPUT, false},
    [G] = {"g", PARITY_SLOT_INPUT, false},
    [BETA] = {"beta", PARITY_SLOT_INPUT, false},
    [CU_SEQLENS] = {"cu_seqlens", PARITY_SLOT_DATA, true},
    [OUTPUT] = {"output", PARITY_SLOT_OUTPUT, false},
};

static parity_gated_delta_rule_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_gated_delta_rule_args args = *(const parity_gated_delta_rule_args *)attributes;
    args.query = tensors[QUERY];
    args.key = tensors[KEY];
    args.value = tensors[VALUE];
    args.g = tensors[G];
    args.beta = tensors[BETA];
    args.cu_seqlens = tensors[CU_SEQLENS];
    args.output = tensors[OUTPUT];
    return args;
}

static parity_gated_delta_rule_grads grads_of(parity_tensor *const *gradients, parity_gated_delta_rule_args *args) {
    return (parity_gated_delta_rule_grads){gradients[OUTPUT], gradients[QUERY], gradients[KEY],
                                           gradients[VALUE],  gradients[G],     gradients[BETA]};
}

PARITY_OP_KERNEL_CALLS(gated_delta_rule)

const parity_op_descriptor parity_gated_delta_rule_op = {
    .name = PARITY_OP_GATED_DELTA_RULE, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_gated_delta_rule_args), .forward = kernel_forward, .backward = kernel_backward,
};
