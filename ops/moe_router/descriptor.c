// descriptor.c: the moe_router op descriptor (ops/op_descriptor.h).
//   slots: router_logits (N, E), correction_bias (E) or NULL (data) -> routing_weights (N, K),
//          expert_indices (N, K) int64 (not differentiated); attributes: parity_moe_router_args (kind, top_k,
//          norm_topk_prob, n_group, topk_group, routed_scaling_factor)
#include "ops/moe_router/moe_router.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(moe_router, "router_logits", PARITY_SLOT_INPUT, router_logits, drouter_logits),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(moe_router, "correction_bias", PARITY_SLOT_DATA, correction_bias, .optional = true),
    PARITY_OP_SLOT(moe_router, "routing_weights", PARITY_SLOT_OUTPUT, routing_weights, drouting_weights),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(moe_router, "expert_indices", PARITY_SLOT_OUTPUT, expert_indices),
};

PARITY_OP_DESCRIPTOR(moe_router, PARITY_OP_MOE_ROUTER, PARITY_OP_ARGS_ATTRIBUTES(moe_router))
