// descriptor.c: the moe_experts op descriptor (ops/op_descriptor.h).
//   slots: hidden (N, H), gate_up_proj (E, 2I, H), down_proj (E, H, I), expert_indices (N, K) int64 (data),
//          routing_weights (N, K) -> output (N, H); no attributes
#include "ops/moe_experts/moe_experts.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(moe_experts, "hidden", PARITY_SLOT_INPUT, hidden, dhidden),
    PARITY_OP_SLOT(moe_experts, "gate_up_proj", PARITY_SLOT_INPUT, gate_up_proj, dgate_up_proj),
    PARITY_OP_SLOT(moe_experts, "down_proj", PARITY_SLOT_INPUT, down_proj, ddown_proj),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(moe_experts, "expert_indices", PARITY_SLOT_DATA, expert_indices),
    PARITY_OP_SLOT(moe_experts, "routing_weights", PARITY_SLOT_INPUT, routing_weights, drouting_weights),
    PARITY_OP_SLOT(moe_experts, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(moe_experts, PARITY_OP_MOE_EXPERTS)
