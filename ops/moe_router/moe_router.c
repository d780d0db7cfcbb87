// moe_router.c: argument validation shared by every MoE router backend.
#include "ops/moe_router/moe_router.h"

#include "ops/core/cpu_math.h"

static bool is_activation_dtype(parity_dtype dtype) {
    return dtype == PARITY_F64 || dtype == PARITY_F32 || dtype == PARITY_BF16;
}

parity_error *parity_moe_router_check(const parity_moe_router_args *args, int64_t *tokens, int64_t *experts) {
    const parity_tensor *logits = args->router_logits;
    PARITY_CHECK(logits, PARITY_ERROR_SHAPE, "moe_router: router_logits is missing");
    PARITY_CHECK(is_activation_dtype(logits->dtype), PARITY_ERROR_SHAPE,
                 "moe_router: router_logits is %s, expected fp64, fp32 or bf16", parity_dtype_name(logits->dtype));
    PARITY_TRY(parity_check_tensor("moe_router", "router_logits", logits, logits->dtype, 2, (int64_t[]){PARITY_ANY, PARITY_ANY}));
    *tokens = logits->shape[0];
    *experts = logits->shape[1];
    int64_t E = *experts, K = args->top_k;
    PARITY_CHECK(E > 0, PARITY_ERROR_SHAPE, "moe_router: router_logits has no experts");
    PARITY_CHECK(K >= 1 && K <= E, PARITY_ERROR_SHAPE, "moe_router: top_k %lld outside [1, %lld] (the number of experts)",
                 (long long)K, (long long)E);
    parity_dtype compute = logits->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    if (args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3) {
        int64_t groups = args->n_group;
        PARITY_CHECK(groups >= 1 && E % groups == 0 && E / groups >= 2, PARITY_ERROR_SHAPE,
                     "moe_router: %lld experts do not split into n_group=%lld groups of at least 2", (long long)E,
                     (long long)groups);
        PARITY_CHECK(args->topk_group >= 1 && args->topk_group <= groups, PARITY_ERROR_SHAPE,
                     "moe_router: topk_group %lld outside [1, %lld] (n_group)", (long long)args->topk_group,
                     (long long)groups);
        PARITY_CHECK(K <= args->topk_group * (E / groups), PARITY_ERROR_SHAPE,
                     "moe_router: top_k %lld exceeds the %lld experts of topk_group=%lld groups", (long long)K,
                     (long long)(args->topk_group * (E / groups)), (long long)args->topk_group);
        PARITY_TRY(parity_check_tensor("moe_router", "correction_bias", args->correction_bias, compute, 1, (int64_t[]){E}));
    } else {
        PARITY_CHECK(args->kind == PARITY_MOE_ROUTER_SOFTMAX_TOP_K, PARITY_ERROR_SHAPE, "moe_router: unknown router kind %d",
                     (int)args->kind);
    }
    const parity_tensor *weights = args->routing_weights;
    PARITY_CHECK(weights, PARITY_ERROR_SHAPE, "moe_router: routing_weights is missing");
    bool weights_dtype_ok = logits->dtype == PARITY_F64 ? weights->dtype == PARITY_F64
                                                        : (weights->dtype == PARITY_F32 || weights->dtype == PARITY_BF16);
    PARITY_CHECK(weights_dtype_ok, PARITY_ERROR_SHAPE, "moe_router: routing_weights is %s, expected %s",
                 parity_dtype_name(weights->dtype), logits->dtype == PARITY_F64 ? "fp64" : "fp32 or bf16");
    PARITY_TRY(parity_check_tensor("moe_router", "routing_weights", weights, weights->dtype, 2, (int64_t[]){*tokens, K}));
    PARITY_TRY(parity_check_tensor("moe_router", "expert_indices", args->expert_indices, PARITY_I64, 2, (int64_t[]){*tokens, K}));
    return NULL;
}

parity_error *parity_moe_router_check_grads(const parity_moe_router_args *args, const parity_moe_router_grads *grads) {
    const parity_tensor *weights = args->routing_weights, *logits = args->router_logits;
    PARITY_TRY(parity_check_tensor("moe_router", "drouting_weights", grads->drouting_weights, weights->dtype, 2, weights->shape));
    if (grads->drouter_logits)
        PARITY_TRY(parity_check_tensor("moe_router", "drouter_logits", grads->drouter_logits, logits->dtype, 2, logits->shape));
    return NULL;
}
