// builtin_ops.c: every op built into parity, one row per op (family): its descriptor
// (ops/<op>/descriptor.c). Adding an op = its folder and one row here.
#include <string.h>

#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/concat/concat.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/embedding/embedding.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/linear/linear.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/matmul/matmul.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
#include "ops/op_descriptor.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rotary/rotary.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"
#include "ops/swiglu/swiglu.h"

static const parity_op_descriptor *const builtin_ops[] = {
    &parity_rms_norm_op,
    &parity_cross_entropy_op,
    &parity_attention_op,
    &parity_causal_conv1d_op,
    &parity_l2_norm_op,
    &parity_gated_delta_rule_op,
    &parity_gdn_gating_op,
    &parity_linear_op,
    &parity_matmul_op,
    &parity_embedding_op,
    &parity_add_op,
    &parity_sigmoid_gate_op,
    &parity_concat_op,
    &parity_split_op,
    &parity_broadcast_heads_op,
    &parity_rotary_op,
    &parity_swiglu_op,
    &parity_rms_norm_gated_op,
    &parity_moe_router_op,
    &parity_moe_experts_op,
    &parity_load_balancing_loss_op,
};

size_t parity_builtin_op_count(void) { return sizeof builtin_ops / sizeof builtin_ops[0]; }

const parity_op_descriptor *parity_builtin_op_at(size_t index) {
    return index < parity_builtin_op_count() ? builtin_ops[index] : NULL;
}

const parity_op_descriptor *parity_builtin_op_find(const char *name) {
    for (size_t i = 0; name && i < parity_builtin_op_count(); i++)
        if (strcmp(builtin_ops[i]->name, name) == 0) return builtin_ops[i];
    return NULL;
}
