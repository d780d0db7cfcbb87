// cuda_backends.cu: registers every CUDA backend family of this build. Adding a family = one row.
extern "C" {
#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/concat/concat.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cuda_backends.h"
#include "ops/cross_entropy/fused_linear_cuda.h"
#include "ops/embedding/embedding.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/linear/linear.h"
#include "ops/load_balancing_loss/load_balancing_loss_cuda.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/matmul/matmul.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm/rms_norm_cuda.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rms_norm_gated/rms_norm_gated_cuda.h"
#include "ops/rotary/rotary.h"
#include "ops/rotary/rotary_cuda.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"
#include "ops/swiglu/swiglu.h"
#include "ops/swiglu/swiglu_cuda.h"
}

typedef parity_error *(*cuda_family_registration)(void);

static const struct {
    const char *what;
    cuda_family_registration register_family;
} cuda_families[] = {
    {"linear eager", parity_linear_register_cuda},
    {"matmul eager", parity_matmul_register_cuda},
    {"embedding eager", parity_embedding_register_cuda},
    {"add eager", parity_add_register_cuda},
    {"sigmoid_gate eager", parity_sigmoid_gate_register_cuda},
    {"concat eager", parity_concat_register_cuda},
    {"split eager", parity_split_register_cuda},
    {"broadcast_heads eager", parity_broadcast_heads_register_cuda},
    {"rms_norm eager", parity_rms_norm_register_cuda},
    {"rms_norm_gated eager", parity_rms_norm_gated_register_cuda},
    {"swiglu eager", parity_swiglu_register_cuda},
    {"rotary eager", parity_rotary_register_cuda},
    {"cross_entropy eager", parity_cross_entropy_register_cuda},
    {"l2_norm eager", parity_l2_norm_register_cuda},
    {"rms_norm liger_kernel", parity_rms_norm_register_cuda_liger_kernel},
    {"rms_norm triton", parity_rms_norm_register_cuda_triton},
    {"rms_norm_gated fla", parity_rms_norm_gated_register_cuda_fla},
    {"rotary liger_kernel", parity_rotary_register_cuda_liger_kernel},
    {"rotary triton", parity_rotary_register_cuda_triton},
    {"swiglu liger_kernel", parity_swiglu_register_cuda_liger_kernel},
    {"load_balancing_loss triton", parity_load_balancing_loss_register_cuda_triton},
    {"cross_entropy liger_kernel", parity_cross_entropy_register_cuda_liger_kernel},
    {"cross_entropy chunk_loss", parity_cross_entropy_register_cuda_chunk_loss},
    {"attention eager", parity_attention_register_cuda},
    {"moe_router eager", parity_moe_router_register_cuda},
    {"moe_experts eager", parity_moe_experts_register_cuda},
    {"load_balancing_loss eager", parity_load_balancing_loss_register_cuda},
    {"causal_conv1d eager", parity_causal_conv1d_register_cuda},
    {"gdn_gating eager", parity_gdn_gating_register_cuda},
    {"gated_delta_rule eager", parity_gated_delta_rule_register_cuda},
};

extern "C" parity_error *parity_register_cuda_backends(void) {
    for (const auto &family : cuda_families) {
        if (!family.register_family) continue;
        parity_error *error = family.register_family();
        if (error) return parity_error_wrap(error, __FILE__, __LINE__, "registering the CUDA %s backends", family.what);
    }
    return NULL;
}
