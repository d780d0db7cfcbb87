// cuda_backends.cu: registers every CUDA backend family of this build. Adding a family = one row.
extern "C" {
#include "ops/attention/attention.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/cuda_backends.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
}

typedef parity_error *(*cuda_family_registration)(void);

static const struct {
    const char *what;
    cuda_family_registration register_family;
} cuda_families[] = {
    {"attention", parity_attention_register_cuda},
    {"moe_router", parity_moe_router_register_cuda},
    {"moe_experts", parity_moe_experts_register_cuda},
    {"load_balancing_loss", parity_load_balancing_loss_register_cuda},
    {"causal_conv1d", parity_causal_conv1d_register_cuda},
    {"gdn_gating", parity_gdn_gating_register_cuda},
    {"gated_delta_rule", parity_gated_delta_rule_register_cuda},
};

extern "C" parity_error *parity_register_cuda_backends(void) {
    for (const auto &family : cuda_families) {
        if (!family.register_family) continue;
        parity_error *error = family.register_family();
        if (error) return parity_error_wrap(error, __FILE__, __LINE__, "registering the CUDA %s backends", family.what);
    }
    return NULL;
}
