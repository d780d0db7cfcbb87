// descriptor.c: the moe_experts op descriptor (ops/op_descriptor.h).
//   slots: hidden (N, H), gate_up_proj (E, 2I, H), down_proj (E, H, I), expert_indices (N, K) int64 (data),
//          routing_weights (N, K) -> output (N, H); no attributes
#include "ops/registry.h"
#include "ops/moe_experts/moe_experts.h"

enum { HIDDEN, GATE_UP, DOWN, INDICES, WEIGHTS, OUTPUT };

static const parity_op_slot slots[] = {
    [HIDDEN] = {"hidden", PARITY_SLOT_INPUT, false},
    [GATE_UP] = {"gate_up_proj", PARITY_SLOT_INPUT, false},
    [DOWN] = {"down_proj", PARITY_SLOT_INPUT, false},
    [INDICES] = {"expert_indices", PARITY_SLOT_DATA, false},
    [WEIGHTS] = {"routing_weights", PARITY_SLOT_INPUT, false},
    [OUTPUT] = {"output", PARITY_SLOT_OUTPUT, false},
};

static parity_moe_experts_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_moe_experts_args args = {0};
    args.hidden = tensors[HIDDEN];
    args.gate_up_proj = tensors[GATE_UP];
    args.down_proj = tensors[DOWN];
    args.expert_indices = tensors[INDICES];
    args.routing_weights = tensors[WEIGHTS];
    args.output = tensors[OUTPUT];
    return args;
}

static parity_moe_experts_grads grads_of(parity_tensor *const *gradients, parity_moe_experts_args *args) {
    return (parity_moe_experts_grads){gradients[OUTPUT], gradients[HIDDEN], gradients[GATE_UP], gradients[DOWN],
                                      gradients[WEIGHTS]};
}

PARITY_OP_KERNEL_CALLS(moe_experts)

const parity_op_descriptor parity_moe_experts_op = {
    .name = PARITY_OP_MOE_EXPERTS, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .forward = kernel_forward, .backward = kernel_backward,
};
