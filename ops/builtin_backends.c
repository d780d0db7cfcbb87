// builtin_backends.c: every backend family built into parity registers itself from this table.
// Values of the kernel-selection vocabulary without a row here are reported "not built yet".
#include "ops/builtin_backends.h"

#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/concat/concat.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cuda_backends.h"
#include "ops/embedding/embedding.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/linear/linear.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/matmul/matmul.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rotary/rotary.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"
#include "ops/swiglu/swiglu.h"

const parity_builtin_backend_family parity_builtin_backends[] = {
    {"rms_norm cpu", parity_rms_norm_register_cpu},
    {"cross_entropy cpu", parity_cross_entropy_register_cpu},
    {"attention cpu", parity_attention_register_cpu},
    {"causal_conv1d cpu", parity_causal_conv1d_register_cpu},
    {"l2_norm cpu", parity_l2_norm_register_cpu},
    {"gated_delta_rule cpu", parity_gated_delta_rule_register_cpu},
    {"gdn_gating cpu", parity_gdn_gating_register_cpu},
    {"linear cpu", parity_linear_register_cpu},
    {"matmul cpu", parity_matmul_register_cpu},
    {"embedding cpu", parity_embedding_register_cpu},
    {"add cpu", parity_add_register_cpu},
    {"sigmoid_gate cpu", parity_sigmoid_gate_register_cpu},
    {"concat cpu", parity_concat_register_cpu},
    {"split cpu", parity_split_register_cpu},
    {"broadcast_heads cpu", parity_broadcast_heads_register_cpu},
    {"rotary cpu", parity_rotary_register_cpu},
    {"swiglu cpu", parity_swiglu_register_cpu},
    {"rms_norm_gated cpu", parity_rms_norm_gated_register_cpu},
    {"moe_router cpu", parity_moe_router_register_cpu},
    {"moe_experts cpu", parity_moe_experts_register_cpu},
    {"load_balancing_loss cpu", parity_load_balancing_loss_register_cpu},
    {"CUDA (every family built)", parity_register_cuda_backends},
};
const size_t parity_builtin_backend_count = sizeof parity_builtin_backends / sizeof parity_builtin_backends[0];
