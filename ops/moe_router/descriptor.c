// descriptor.c: the moe_router op descriptor (ops/op_descriptor.h).
//   slots: router_logits (N, E), correction_bias (E) or NULL (data) -> routing_weights (N, K), expert_indices
//          (N, K) int64 (no gradient); attributes: parity_moe_router_args (kind, top_k, norm_topk_prob,
//          n_group, topk_group, routed_scaling_factor)
#include "ops/registry.h"
#include "ops/moe_router/moe_router.h"

enum { LOGITS, CORRECTION_BIAS, WEIGHTS, INDICES };

static const parity_op_slot slots[] = {
    [LOGITS] = {"router_logits", PARITY_SLOT_INPUT, false},
    [CORRECTION_BIAS] = {"correction_bias", PARITY_SLOT_DATA, true},
    [WEIGHTS] = {"routing_weights", PARITY_SLOT_OUTPUT, false},
    [INDICES] = {"expert_indices", PARITY_SLOT_OUTPUT, false},
};

static parity_moe_router_args args_of(const void *attributes, parity_tensor *const *tensors) {
    parity_moe_router_args args = *(const parity_moe_router_args *)attributes;
    args.router_logits = tensors[LOGITS];
    args.correction_bias = tensors[CORRECTION_BIAS];
    args.routing_weights = tensors[WEIGHTS];
    args.expert_indices = tensors[INDICES];
    return args;
}

static parity_moe_router_grads grads_of(parity_tensor *const *gradients, parity_moe_router_args *args) {
    return (parity_moe_router_grads){gradients[WEIGHTS], gradients[LOGITS]};
}

PARITY_OP_KERNEL_CALLS(moe_router)

const parity_op_descriptor parity_moe_router_op = {
    .name = PARITY_OP_MOE_ROUTER, .slots = slots, .slot_count = PARITY_OP_SLOT_COUNT(slots),
    .attributes_size = sizeof(parity_moe_router_args), .forward = kernel_forward, .backward = kernel_backward,
};
