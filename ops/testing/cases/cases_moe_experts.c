// cases_moe_experts.c: MoE experts rows (primes, a single token, K = 1 and K = E, experts no token
// chose, f32 routing weights with bf16 activations as DeepSeek-V3 has them) and invalid calls.
// The routing is given (expert_indices is an input), so the op is smooth in every float input.
#include <stdlib.h>

#include "ops/testing/moe_case_inputs.h"
#include "ops/testing/op_cases.h"
#include "ops/moe_experts/moe_experts.h"

typedef struct moe_experts_params {
    int64_t tokens, hidden, experts, intermediate, top_k;
    int64_t unused_expert;  // an expert no token is routed to (-1: none forced)
    bool f32_weights;       // routing weights in f32 when the activations are bf16 (DeepSeek-V3)
} moe_experts_params;

// Token t uses K consecutive experts (cyclically, skipping the unused one) starting at 3t, in
// reverse order on odd tokens: distinct per token, varied slot order.
static void route(const moe_experts_params *params, int64_t *indices) {
    int64_t available[64], count = 0;
    for (int64_t e = 0; e < params->experts && count < 64; e++)
        if (e != params->unused_expert) available[count++] = e;
    for (int64_t t = 0; t < params->tokens; t++)
        for (int64_t k = 0; k < params->top_k; k++) {
            int64_t offset = t % 2 ? params->top_k - 1 - k : k;
            indices[t * params->top_k + k] = available[(3 * t + offset) % count];
        }
}

static parity_error *moe_experts_setup(op_check_state *state, const void *raw) {
    const moe_experts_params *params = raw;
    int64_t N = params->tokens, H = params->hidden, E = params->experts, I = params->intermediate, K = params->top_k;
    int64_t indices[256];
    if (N * K > 256 || E > 64) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe_experts rows: row too large");
    route(params, indices);
    op_check_input(state, "hidden", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(N, H));
    op_check_input(state, "gate_up_proj", true, OP_CHECK_NORMAL, 0, 0.3, PARITY_SHAPE(E, 2 * I, H));
    op_check_input(state, "down_proj", true, OP_CHECK_NORMAL, 0, 0.3, PARITY_SHAPE(E, H, I));
    op_check_indices(state, "expert_indices", indices, PARITY_SHAPE(N, K));
    op_check_input(state, "routing_weights", true, OP_CHECK_UNIFORM, 0.1, 1.0, PARITY_SHAPE(N, K));
    if (params->f32_weights && state->dtype == PARITY_BF16) PARITY_TRY(moe_retype_input(state, "routing_weights", PARITY_F32));
    op_check_output(state, "output", true, PARITY_SHAPE(N, H));
    return NULL;
}

#define MOE_EXPERTS_ROW(label, tokens_, hidden_, experts_, intermediate_, top_k_, unused_, f32_weights_)          \
    {&parity_moe_experts_op, label, moe_experts_setup,                                                            \
     &(const moe_experts_params){tokens_, hidden_, experts_, intermediate_, top_k_, unused_, f32_weights_}, 0, 0}

static const op_check_case moe_experts_cases[] = {
    MOE_EXPERTS_ROW("E=4 K=2 N=7 H=16 I=8 expert 2 idle", 7, 16, 4, 8, 2, 2, false),
    MOE_EXPERTS_ROW("E=5 K=3 N=11 H=13 I=7 expert 4 idle", 11, 13, 5, 7, 3, 4, false),
    MOE_EXPERTS_ROW("E=8 K=1 N=5 H=12 I=5", 5, 12, 8, 5, 1, -1, false),
    MOE_EXPERTS_ROW("E=4 K=2 N=1 H=16 I=8", 1, 16, 4, 8, 2, -1, false),
    MOE_EXPERTS_ROW("E=3 K=3 N=4 H=48 I=11", 4, 48, 3, 11, 3, -1, false),
    MOE_EXPERTS_ROW("E=4 K=2 N=6 H=16 I=8 f32 weights", 6, 16, 4, 8, 2, 3, true),
};
const op_case_list moe_experts_case_list = OP_CASE_LIST(moe_experts_cases);

// ---- GPU rows (test_moe_experts_gpu.c): the grouped backends' awkward cases ----
// E not a multiple of anything, K = 1, 2, 8, an expert no token chose and one every token chose (the
// "hot" expert: in slot t % K of every token), H and I off the 128 x 128 x 32 tiles (multiples of 8,
// as the grouped GEMMs need), experts with more rows than a tile, f32 routing weights; then rows on
// fused_quack's 128 x 128 x 64 tiles.
typedef struct moe_experts_gpu_params {
    int64_t tokens, hidden, experts, intermediate, top_k;
    int64_t unused_expert; // -1: none forced
    int64_t hot_expert;    // chosen by every token (-1: none)
    bool f32_weights;
} moe_experts_gpu_params;

// Token t: the hot expert in slot t % K (when set), the other slots K distinct experts from the rest,
// cyclically from 3t, reversed on odd tokens.
static void route_gpu(const moe_experts_gpu_params *params, int64_t *indices) {
    int64_t available[256], count = 0;
    for (int64_t e = 0; e < params->experts && count < 256; e++)
        if (e != params->unused_expert && e != params->hot_expert) available[count++] = e;
    for (int64_t t = 0; t < params->tokens; t++) {
        int64_t next = 0;
        for (int64_t k = 0; k < params->top_k; k++) {
            int64_t *slot = &indices[t * params->top_k + (t % 2 ? params->top_k - 1 - k : k)];
            if (params->hot_expert >= 0 && k == t % params->top_k) *slot = params->hot_expert;
            else *slot = available[(3 * t + next++) % count];
        }
    }
}

static parity_error *moe_experts_gpu_setup(op_check_state *state, const void *raw) {
    const moe_experts_gpu_params *params = raw;
    int64_t N = params->tokens, H = params->hidden, E = params->experts, I = params->intermediate, K = params->top_k;
    int64_t free_experts = E - (params->unused_expert >= 0) - (params->hot_expert >= 0);
    if (E > 256 || free_experts < K - (params->hot_expert >= 0) || free_experts <= 0)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe_experts GPU rows: too few experts for K");
    int64_t *indices = malloc((size_t)(N * K) * sizeof *indices);
    if (!indices) return PARITY_ERROR(PARITY_ERROR_MEMORY, "moe_experts GPU rows: indices");
    route_gpu(params, indices);
    op_check_input(state, "hidden", true, OP_CHECK_NORMAL, 0, 1, PARITY_SHAPE(N, H));
    op_check_input(state, "gate_up_proj", true, OP_CHECK_NORMAL, 0, 0.3, PARITY_SHAPE(E, 2 * I, H));
    op_check_input(state, "down_proj", true, OP_CHECK_NORMAL, 0, 0.3, PARITY_SHAPE(E, H, I));
    op_check_indices(state, "expert_indices", indices, PARITY_SHAPE(N, K));
    free(indices);
    op_check_input(state, "routing_weights", true, OP_CHECK_UNIFORM, 0.1, 1.0, PARITY_SHAPE(N, K));
    if (params->f32_weights && state->dtype == PARITY_BF16) PARITY_TRY(moe_retype_input(state, "routing_weights", PARITY_F32));
    op_check_output(state, "output", true, PARITY_SHAPE(N, H));
    return NULL;
}

#define MOE_EXPERTS_GPU_ROW(label, tokens_, hidden_, experts_, intermediate_, top_k_, unused_, hot_, f32_weights_)   \
    {&parity_moe_experts_op, label, moe_experts_gpu_setup,                                                            \
     &(const moe_experts_gpu_params){tokens_, hidden_, experts_, intermediate_, top_k_, unused_, hot_, f32_weights_}, 0, 0}

static const op_check_case moe_experts_gpu_cases[] = {
    MOE_EXPERTS_GPU_ROW("gpu E=5 K=2 N=64 H=72 I=40 expert 3 idle", 64, 72, 5, 40, 2, 3, -1, false),
    MOE_EXPERTS_GPU_ROW("gpu E=7 K=1 N=300 H=64 I=40 all on expert 2", 300, 64, 7, 40, 1, -1, 2, false),
    MOE_EXPERTS_GPU_ROW("gpu E=11 K=8 N=96 H=136 I=72 expert 0 hot expert 5 idle", 96, 136, 11, 72, 8, 5, 0, false),
    MOE_EXPERTS_GPU_ROW("gpu E=7 K=2 N=512 H=256 I=136", 512, 256, 7, 136, 2, -1, -1, false),
    MOE_EXPERTS_GPU_ROW("gpu E=5 K=2 N=130 H=72 I=40 expert 1 hot f32 weights", 130, 72, 5, 40, 2, -1, 1, true),
    MOE_EXPERTS_GPU_ROW("gpu E=4 K=2 N=1 H=16 I=8", 1, 16, 4, 8, 2, -1, -1, false),
    // On fused_quack's 128 x 128 x 64 wgmma tiles (and off them by whole K slices): H 128 / 256 / 512,
    // I 64 / 192 / 256, experts of several row tiles, and (the last) more tiles than the H200's 132 SMs.
    MOE_EXPERTS_GPU_ROW("gpu E=9 K=8 N=64 H=128 I=192 expert 4 idle", 64, 128, 9, 192, 8, 4, -1, false),
    MOE_EXPERTS_GPU_ROW("gpu E=5 K=1 N=200 H=256 I=64 all on expert 3", 200, 256, 5, 64, 1, -1, 3, false),
    MOE_EXPERTS_GPU_ROW("gpu E=7 K=2 N=384 H=128 I=192 expert 6 idle f32 weights", 384, 128, 7, 192, 2, 6, -1, true),
    MOE_EXPERTS_GPU_ROW("gpu E=7 K=2 N=4096 H=512 I=256 expert 3 idle", 4096, 512, 7, 256, 2, 3, -1, false),
};
const op_case_list moe_experts_gpu_case_list = OP_CASE_LIST(moe_experts_gpu_cases);

// ---- invalid calls ----
static parity_error *call_experts(moe_tensor_bag *bag, parity_moe_experts_args args) {
    parity_error *error = bag->error;
    const parity_backend *backend;
    parity_saved saved = {0};
    if (!error) error = parity_registry_resolve(PARITY_OP_MOE_EXPERTS, "eager", PARITY_CPU, &backend);
    if (!error) error = ((const parity_moe_experts_kernels *)backend->kernels)->forward(op_check_cpu_exec(), &args, &saved);
    parity_saved_release(&saved);
    moe_bag_release(bag);
    return error;
}

static parity_error *call_with_expert_index_out_of_range(void) {
    moe_tensor_bag bag = {0};
    parity_tensor *indices = moe_bag_zeros(&bag, PARITY_I64, PARITY_SHAPE(3, 2));
    if (indices) ((int64_t *)indices->data)[1 * 2 + 1] = 4; // token 1, slot 1 -> expert 4 of 4
    return call_experts(&bag, (parity_moe_experts_args){
                                  moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(3, 16)),
                                  moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(4, 16, 16)),
                                  moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(4, 16, 8)),
                                  indices,
                                  moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(3, 2)),
                                  moe_bag_zeros(&bag, PARITY_F32, PARITY_SHAPE(3, 16)),
                              });
}

static parity_error *call_with_gate_up_proj_not_fused(void) {
    moe_tensor_bag bag = {0};
    return call_experts(&bag, (parity_moe_experts_args){
                                  moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(3, 16)),
                                  moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(4, 8, 16)), // gate only: (E, I, H)
                                  moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(4, 16, 8)),
                                  moe_bag_zeros(&bag, PARITY_I64, PARITY_SHAPE(3, 2)),
                                  moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(3, 2)),
                                  moe_bag_zeros(&bag, PARITY_BF16, PARITY_SHAPE(3, 16)),
                              });
}

static const op_invalid_case moe_experts_invalid_cases[] = {
    {PARITY_OP_MOE_EXPERTS, "expert index >= E", call_with_expert_index_out_of_range,
     "moe_experts: expert index 4 at token 1, slot 1 is outside [0, 4)"},
    {PARITY_OP_MOE_EXPERTS, "gate_up_proj is not (E, 2I, H)", call_with_gate_up_proj_not_fused,
     "moe_experts: gate_up_proj has shape (4, 8, 16), expected (4, 16, 16)"},
};
const op_invalid_list moe_experts_invalid_list = OP_CASE_LIST(moe_experts_invalid_cases);
