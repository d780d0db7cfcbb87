// cases_load_balancing_loss.c: load-balancing loss rows (several layers, one token per layer,
// K = 1 and primes) and invalid calls. The logits are separated (moe_case_inputs.h): every token's
// top-k is far from a tie, so finite differences never change the counts.
#include "ops/testing/moe_case_inputs.h"
#include "ops/testing/op_cases.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"

typedef struct load_balancing_loss_params {
    int64_t layers, tokens, experts, top_k; // logits (layers * tokens, experts)
} load_balancing_loss_params;

static parity_error *load_balancing_loss_setup(op_check_state *state, const void *raw) {
    const load_balancing_loss_params *params = raw;
    op_check_input(state, "router_logits", true, OP_CHECK_UNIFORM, -0.1, 0.1,
                   PARITY_SHAPE(params->layers * params->tokens, params->experts));
    // spacing 0.5, jitter +-0.1: neighbouring logits differ by >= 0.3 (a probability ratio >= 1.35,
    // distinct even in bf16), so top-k is never close to a tie
    PARITY_TRY(moe_separate_logits(state, "router_logits", 0.5, NULL, NULL));
    op_check_output_typed(state, "loss", true, parity_load_balancing_loss_dtype(state->dtype), 0, NULL);
    op_check_set_attributes(state, &(parity_load_balancing_loss_args){.num_layers = params->layers,
                                                                     .top_k = params->top_k});
    return NULL;
}

#define LOAD_BALANCING_ROW(label, layers_, tokens_, experts_, top_k_)                                       \
    {&parity_load_balancing_loss_op, label, load_balancing_loss_setup,                                      \
     &(const load_balancing_loss_params){layers_, tokens_, experts_, top_k_}, 0, 0}

static const op_check_case load_balancing_loss_cases[] = {
    LOAD_BALANCING_ROW("E=4 K=2 layers=2 N=9", 2, 9, 4, 2),
    LOAD_BALANCING_ROW("E=8 K=1 layers=1 N=5", 1, 5, 8, 1),
    LOAD_BALANCING_ROW("E=5 K=3 layers=3 N=1", 3, 1, 5, 3),
    LOAD_BALANCING_ROW("E=4 K=2 layers=1 N=1", 1, 1, 4, 2),
    LOAD_BALANCING_ROW("E=7 K=2 layers=2 N=13", 2, 13, 7, 2),
    LOAD_BALANCING_ROW("E=128 K=8 layers=2 N=50", 2, 50, 128, 8),
    LOAD_BALANCING_ROW("E=60 K=4 layers=3 N=7", 3, 7, 60, 4),
};
const op_case_list load_balancing_loss_case_list = OP_CASE_LIST(load_balancing_loss_cases);

// ---- invalid calls ----
static parity_error *call_loss(moe_tensor_bag *bag, parity_load_balancing_loss_args args) {
    parity_error *error = bag->error;
    const parity_backend *backend;
    parity_saved saved = {0};
    if (!error) error = parity_registry_resolve(PARITY_OP_LOAD_BALANCING_LOSS, "eager", PARITY_CPU, &backend);
    if (!error) error = ((const parity_load_balancing_loss_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    parity_saved_release(&saved);
    moe_bag_release(bag);
    return error;
}

static parity_error *call_with_rows_not_split_into_layers(void) {
    moe_tensor_bag bag = {0};
    return call_loss(&bag, (parity_load_balancing_loss_args){moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(7, 4)), 2, 2,
                                                             moe_bag_zeros(&bag, PARITY_F32, 0, NULL)});
}

static parity_error *call_with_top_k_above_experts(void) {
    moe_tensor_bag bag = {0};
    return call_loss(&bag, (parity_load_balancing_loss_args){moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(6, 4)), 1, 5,
                                                             moe_bag_zeros(&bag, PARITY_F32, 0, NULL)});
}

static parity_error *call_with_bf16_loss(void) {
    moe_tensor_bag bag = {0};
    return call_loss(&bag, (parity_load_balancing_loss_args){moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(6, 4)), 1, 2,
                                                             moe_bag_zeros(&bag, PARITY_BF16, 0, NULL)});
}

static const op_invalid_case load_balancing_loss_invalid_cases[] = {
    {PARITY_OP_LOAD_BALANCING_LOSS, "rows do not split into layers", call_with_rows_not_split_into_layers,
     "load_balancing_loss: 7 rows do not split into num_layers=2"},
    {PARITY_OP_LOAD_BALANCING_LOSS, "top_k above the number of experts", call_with_top_k_above_experts,
     "load_balancing_loss: top_k 5 outside [1, 4]"},
    {PARITY_OP_LOAD_BALANCING_LOSS, "loss not f32 for bf16 logits", call_with_bf16_loss,
     "load_balancing_loss: loss is bf16, expected fp32"},
};
const op_invalid_list load_balancing_loss_invalid_list = OP_CASE_LIST(load_balancing_loss_invalid_cases);
