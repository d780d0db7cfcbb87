// cases_moe_router.c: MoE router rows (softmax top-k and DeepSeek-V3 grouped sigmoid, norm on/off,
// primes, a single token) and invalid calls. Logits are separated (moe_case_inputs.h): every top-k
// and group choice is at least a clear margin from a tie, so finite differences never flip one.
#include <math.h>

#include "ops/testing/moe_case_inputs.h"
#include "ops/testing/op_cases.h"
#include "ops/moe_router/moe_router.h"
#include "ops/moe_router/routing_math.h"

typedef struct moe_router_params {
    parity_moe_router_kind kind;
    int64_t tokens, experts, top_k;
    bool norm_topk_prob;
    int64_t n_group, topk_group;
    double routed_scaling_factor;
} moe_router_params;

typedef struct deepseek_margin_context {
    const moe_router_params *params;
    double bias[64];
} deepseek_margin_context;

// Smallest gap a choice may sit from a tie, in scores (sigmoid + bias) and group scores.
static const double deepseek_margin = 0.02;

// True when the f64 group choice and expert choice of one row are both `deepseek_margin` clear.
static bool deepseek_choices_are_clear(const double *logits, int64_t experts, const void *raw) {
    const deepseek_margin_context *context = raw;
    const moe_router_params *params = context->params;
    int64_t groups = params->n_group, group_size = experts / groups, order[64], best[2];
    double choice[64], group_scores[64];
    for (int64_t j = 0; j < experts; j++) choice[j] = 1 / (1 + exp(-logits[j])) + context->bias[j];
    for (int64_t g = 0; g < groups; g++) {
        parity_routing_top_k_sorted(choice + g * group_size, group_size, 2, best);
        group_scores[g] = choice[g * group_size + best[0]] + choice[g * group_size + best[1]];
    }
    parity_routing_top_k_sorted(group_scores, groups, groups, order);
    if (params->topk_group < groups &&
        group_scores[order[params->topk_group - 1]] - group_scores[order[params->topk_group]] < deepseek_margin)
        return false;
    for (int64_t rank = params->topk_group; rank < groups; rank++)
        for (int64_t j = order[rank] * group_size; j < (order[rank] + 1) * group_size; j++) choice[j] = -INFINITY;
    parity_routing_top_k_sorted(choice, experts, params->top_k + 1 <= experts ? params->top_k + 1 : experts, order);
    int64_t kept = params->topk_group * group_size;
    return params->top_k >= kept || choice[order[params->top_k - 1]] - choice[order[params->top_k]] >= deepseek_margin;
}

static parity_error *moe_router_setup(op_check_state *state, const void *raw) {
    const moe_router_params *params = raw;
    int64_t N = params->tokens, E = params->experts, K = params->top_k;
    bool deepseek = params->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3;
    op_check_input(state, "router_logits", true, OP_CHECK_UNIFORM, -0.1, 0.1, PARITY_SHAPE(N, E));
    if (deepseek) {
        deepseek_margin_context context = {.params = params};
        parity_tensor *bias = op_check_input(state, "correction_bias", false, OP_CHECK_UNIFORM, -0.05, 0.05, PARITY_SHAPE(E));
        if (!bias || E > 64) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe_router rows: bias of %lld experts", (long long)E);
        for (int64_t j = 0; j < E; j++) context.bias[j] = parity_tensor_get(bias, j);
        PARITY_TRY(moe_separate_logits(state, "router_logits", 0.5, deepseek_choices_are_clear, &context));
        // DeepSeek-V3 routes in f32 whatever the activations are: f32 logits, bias and weights.
        if (state->dtype != PARITY_F64) {
            PARITY_TRY(moe_retype_input(state, "router_logits", PARITY_F32));
            PARITY_TRY(moe_retype_input(state, "correction_bias", PARITY_F32));
        }
    } else {
        // spacing 0.5, jitter +-0.1: neighbouring logits differ by >= 0.3, so top-k is never close to a tie
        PARITY_TRY(moe_separate_logits(state, "router_logits", 0.5, NULL, NULL));
    }
    parity_dtype weights_dtype = deepseek && state->dtype != PARITY_F64 ? PARITY_F32 : state->dtype;
    op_check_output_typed(state, "routing_weights", true, weights_dtype, PARITY_SHAPE(N, K));
    op_check_output_typed(state, "expert_indices", false, PARITY_I64, PARITY_SHAPE(N, K));
    op_check_set_attributes(state, &(parity_moe_router_args){
        .kind = params->kind, .top_k = params->top_k, .norm_topk_prob = params->norm_topk_prob,
        .n_group = params->n_group, .topk_group = params->topk_group,
        .routed_scaling_factor = params->routed_scaling_factor});
    return NULL;
}

#define SOFTMAX_ROW(label, tokens_, experts_, top_k_, norm_)                                                         \
    {&parity_moe_router_op, label, moe_router_setup,                                                                 \
     &(const moe_router_params){PARITY_MOE_ROUTER_SOFTMAX_TOP_K, tokens_, experts_, top_k_, norm_, 0, 0, 1.0}, 0, 0}
#define DEEPSEEK_ROW(label, tokens_, experts_, top_k_, norm_, groups_, kept_, scale_)                                           \
    {&parity_moe_router_op, label, moe_router_setup,                                                                            \
     &(const moe_router_params){PARITY_MOE_ROUTER_DEEPSEEK_V3, tokens_, experts_, top_k_, norm_, groups_, kept_, scale_}, 0, 0}

static const op_check_case moe_router_cases[] = {
    SOFTMAX_ROW("softmax E=4 K=2 N=7", 7, 4, 2, false),
    SOFTMAX_ROW("softmax E=4 K=2 N=7 norm", 7, 4, 2, true),
    SOFTMAX_ROW("softmax E=8 K=1 N=5", 5, 8, 1, false),
    // (no K=1 row with norm: its weight is p / p = 1, a gradient that is exactly zero in f64 and
    // round-off in f32, which no relative comparison can judge)
    SOFTMAX_ROW("softmax E=8 K=2 N=5 norm", 5, 8, 2, true),
    SOFTMAX_ROW("softmax E=5 K=3 N=1 norm", 1, 5, 3, true),
    SOFTMAX_ROW("softmax E=5 K=3 N=11", 11, 5, 3, false),
    DEEPSEEK_ROW("deepseek E=4 K=2 groups=2/1 N=7 norm x1.5", 7, 4, 2, true, 2, 1, 1.5),
    DEEPSEEK_ROW("deepseek E=8 K=3 groups=4/2 N=5 norm x2.5", 5, 8, 3, true, 4, 2, 2.5),
    DEEPSEEK_ROW("deepseek E=9 K=4 groups=3/2 N=6 norm x1.5", 6, 9, 4, true, 3, 2, 1.5),
    DEEPSEEK_ROW("deepseek E=6 K=2 groups=3/2 N=1 x1.5", 1, 6, 2, false, 3, 2, 1.5),
};
const op_case_list moe_router_case_list = OP_CASE_LIST(moe_router_cases);

// ---- invalid calls ----
static parity_error *call_router(moe_tensor_bag *bag, parity_moe_router_args args) {
    parity_error *error = bag->error;
    const parity_backend *backend;
    parity_saved saved = {0};
    if (!error) error = parity_registry_resolve(PARITY_OP_MOE_ROUTER, "eager", PARITY_CPU, &backend);
    if (!error) error = ((const parity_moe_router_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    parity_saved_release(&saved);
    moe_bag_release(bag);
    return error;
}

static parity_error *call_with_top_k_above_experts(void) {
    moe_tensor_bag bag = {0};
    return call_router(&bag, (parity_moe_router_args){
                                 .router_logits = moe_bag_zeros(&bag, PARITY_F64, PARITY_SHAPE(3, 4)),
                                 .kind = PARITY_MOE_ROUTER_SOFTMAX_TOP_K,
                                 .top_k = 5,
                                 .routing_weights = moe_bag_zeros(&bag, PARITY_F64, PARITY_SHAPE(3, 5)),
                                 .expert_indices = moe_bag_zeros(&bag, PARITY_I64, PARITY_SHAPE(3, 5)),
                             });
}

static parity_error *call_with_uneven_groups(void) {
    moe_tensor_bag bag = {0};
    return call_router(&bag, (parity_moe_router_args){
                                 .router_logits = moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(3, 6)),
                                 .correction_bias = moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(6)),
                                 .kind = PARITY_MOE_ROUTER_DEEPSEEK_V3,
                                 .top_k = 2,
                                 .n_group = 4,
                                 .topk_group = 1,
                                 .routed_scaling_factor = 1.0,
                                 .routing_weights = moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(3, 2)),
                                 .expert_indices = moe_bag_zeros(&bag, PARITY_I64, PARITY_SHAPE(3, 2)),
                             });
}

static parity_error *call_with_mismatched_weights(void) {
    moe_tensor_bag bag = {0};
    return call_router(&bag, (parity_moe_router_args){
                                 .router_logits = moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(3, 4)),
                                 .kind = PARITY_MOE_ROUTER_SOFTMAX_TOP_K,
                                 .top_k = 2,
                                 .routing_weights = moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(3, 3)),
                                 .expert_indices = moe_bag_zeros(&bag, PARITY_I64, PARITY_SHAPE(3, 2)),
                             });
}

static const op_invalid_case moe_router_invalid_cases[] = {
    {PARITY_OP_MOE_ROUTER, "top_k above the number of experts", call_with_top_k_above_experts,
     "moe_router: top_k 5 outside [1, 4]"},
    {PARITY_OP_MOE_ROUTER, "experts do not split into groups", call_with_uneven_groups,
     "moe_router: 6 experts do not split into n_group=4 groups"},
    {PARITY_OP_MOE_ROUTER, "routing_weights shape differs from (N, K)", call_with_mismatched_weights,
     "moe_router: routing_weights has shape (3, 3), expected (3, 2)"},
};
const op_invalid_list moe_router_invalid_list = OP_CASE_LIST(moe_router_invalid_cases);
