// eager.c: the reference MoE router on the CPU (value "eager"), both router kinds of
// moe_router.h, with every f32 operation rounded where the CUDA kernels round it.
// Saves the per-expert scores (N, E) in the compute precision: softmax probabilities or sigmoid
// scores. Backward, for one token with chosen experts idx_k and incoming g_k = dweights[k]:
//   softmax top-k:  (norm) S = sum_k p_k, dp_k = g_k / S - sum_j g_j * (p_j / S) / S; else dp_k = g_k
//                   dlogits_j = dp_j p_j - p_j sum_i dp_i p_i              (dp_j = 0 off the top-k;
//                   PyTorch's order of operations, see parity_routing_softmax_backward)
//   DeepSeek-V3:    g_k *= routed_scaling_factor; (norm) D = sum_k s_k + 1e-20,
//                   ds_k = g_k / D - sum_j g_j * (s_j / D) / D; else ds_k = g_k
//                   dlogits_j = ds_j * (1 - s_j) * s_j                     (ds_j = 0 off the top-k)
// which is autograd's order of operations (in-place division, then the sum's broadcast).
#include <math.h>
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/moe_router/moe_router.h"
#include "ops/moe_router/routing_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

typedef struct router_scratch {
    double *scores_for_choice; // (E)
    double *group_scores;      // (n_group)
    int64_t *groups;           // (n_group)
    int64_t *chosen;           // (K)
} router_scratch;

static void scratch_free(router_scratch *scratch) {
    free(scratch->scores_for_choice);
    free(scratch->group_scores);
    free(scratch->groups);
    free(scratch->chosen);
}

static parity_error *scratch_alloc(router_scratch *scratch, int64_t experts, int64_t groups, int64_t top_k) {
    scratch->scores_for_choice = malloc((size_t)experts * sizeof(double));
    scratch->group_scores = malloc((size_t)(groups > 0 ? groups : 1) * sizeof(double));
    scratch->groups = malloc((size_t)(groups > 0 ? groups : 1) * sizeof(int64_t));
    scratch->chosen = malloc((size_t)top_k * sizeof(int64_t));
    if (scratch->scores_for_choice && scratch->group_scores && scratch->groups && scratch->chosen) return NULL;
    scratch_free(scratch);
    return PARITY_ERROR(PARITY_ERROR_MEMORY, "moe_router: scratch for %lld experts", (long long)experts);
}

// DeepSeek-V3 choice for one token: scores (E) -> chosen (K) in torch.topk(sorted=False) order.
static void deepseek_choose(const parity_moe_router_args *args, const double *scores, const double *bias, int64_t experts,
                            parity_dtype dtype, router_scratch *scratch) {
    int64_t groups = args->n_group, group_size = experts / groups;
    double *choice = scratch->scores_for_choice;
    for (int64_t j = 0; j < experts; j++) choice[j] = parity_round_compute(scores[j] + bias[j], dtype);
    for (int64_t g = 0; g < groups; g++) {
        int64_t best[2];
        parity_routing_top_k_sorted(choice + g * group_size, group_size, 2, best);
        scratch->group_scores[g] =
            parity_round_compute(choice[g * group_size + best[0]] + choice[g * group_size + best[1]], dtype);
    }
    parity_routing_top_k_sorted(scratch->group_scores, groups, args->topk_group, scratch->groups);
    for (int64_t g = 0; g < groups; g++) {
        bool kept = false;
        for (int64_t i = 0; i < args->topk_group; i++) kept = kept || scratch->groups[i] == g;
        if (!kept)
            for (int64_t j = g * group_size; j < (g + 1) * group_size; j++) choice[j] = -INFINITY;
    }
    parity_routing_top_k_unsorted(choice, experts, args->top_k, scratch->chosen);
}

// sum over the chosen experts, left to right, in the compute precision
static double chosen_sum(const double *scores, const int64_t *chosen, int64_t top_k, parity_dtype dtype) {
    double sum = 0;
    for (int64_t k = 0; k < top_k; k++) sum = parity_round_compute(sum + scores[chosen[k]], dtype);
    return sum;
}

// The normalizer of the chosen weights: sum (softmax top-k) or sum + 1e-20 (DeepSeek-V3).
static double normalizer(const parity_moe_router_args *args, const double *scores, const int64_t *chosen,
                         parity_dtype dtype) {
    double sum = chosen_sum(scores, chosen, args->top_k, dtype);
    if (args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3) sum = parity_round_compute(sum + parity_round_compute(1e-20, dtype), dtype);
    return sum;
}

static parity_error *check_cpu_tensors(const parity_moe_router_args *args) {
    PARITY_TRY(parity_check_cpu("moe_router", "router_logits", args->router_logits));
    if (args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3)
        PARITY_TRY(parity_check_cpu("moe_router", "correction_bias", args->correction_bias));
    PARITY_TRY(parity_check_cpu("moe_router", "routing_weights", args->routing_weights));
    PARITY_TRY(parity_check_cpu("moe_router", "expert_indices", args->expert_indices));
    return NULL;
}

static parity_error *moe_router_eager_forward(const parity_exec *exec, const parity_moe_router_args *args,
                                              parity_saved *saved) {
    int64_t tokens, experts;
    PARITY_TRY(parity_moe_router_check(args, &tokens, &experts));
    PARITY_TRY(check_cpu_tensors(args));
    parity_dtype dtype = args->router_logits->dtype, compute = parity_compute_dtype(dtype);
    int64_t top_k = args->top_k;
    bool deepseek = args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3;
    parity_tensor *saved_scores;
    PARITY_TRY(parity_saved_alloc(saved, &saved_scores, compute, PARITY_CPU, PARITY_SHAPE(tokens, experts)));

    router_scratch scratch;
    PARITY_TRY(scratch_alloc(&scratch, experts, deepseek ? args->n_group : 0, top_k));
    parity_cpu_values logits = {0}, bias = {0}, scores = {0}, weights = {0};
    parity_error *error = parity_cpu_values_load(args->router_logits, "moe_router router_logits", &logits);
    if (!error && deepseek) error = parity_cpu_values_load(args->correction_bias, "moe_router correction_bias", &bias);
    if (!error) error = parity_cpu_values_new(tokens * experts, &scores);
    if (!error) error = parity_cpu_values_new(tokens * top_k, &weights);
    if (error) goto done;
    double scaling = parity_round_compute(args->routed_scaling_factor, dtype); // a Python float scalar in f32 opmath
    for (int64_t n = 0; n < tokens; n++) {
        const double *row = logits.data + n * experts;
        double *score = scores.data + n * experts, *weight = weights.data + n * top_k;
        if (deepseek) {
            for (int64_t j = 0; j < experts; j++) // sigmoid: 1 / (1 + exp(-x))
                score[j] = parity_round_compute(
                    1.0 / parity_round_compute(1.0 + parity_round_compute(exp(-row[j]), dtype), dtype), dtype);
            deepseek_choose(args, score, bias.data, experts, dtype, &scratch);
        } else {
            parity_routing_softmax(row, experts, compute, score);
            parity_routing_top_k_sorted(score, experts, top_k, scratch.chosen);
        }
        double denominator = args->norm_topk_prob ? normalizer(args, score, scratch.chosen, dtype) : 1.0;
        for (int64_t k = 0; k < top_k; k++) {
            double value = score[scratch.chosen[k]];
            if (args->norm_topk_prob) value = parity_round_compute(value / denominator, dtype);
            if (deepseek) value = parity_round_compute(value * scaling, dtype);
            weight[k] = value;
            parity_tensor_set(args->expert_indices, n * top_k + k, (double)scratch.chosen[k]);
        }
    }
    parity_cpu_values_store(saved_scores, scores.data);
    parity_cpu_values_store(args->routing_weights, weights.data);
done:
    parity_cpu_values_free(&logits);
    parity_cpu_values_free(&bias);
    parity_cpu_values_free(&scores);
    parity_cpu_values_free(&weights);
    scratch_free(&scratch);
    return error;
}

static parity_error *moe_router_eager_backward(const parity_exec *exec, const parity_moe_router_args *args,
                                               const parity_saved *saved, const parity_moe_router_grads *grads) {
    int64_t tokens, experts;
    PARITY_TRY(parity_moe_router_check(args, &tokens, &experts));
    PARITY_TRY(parity_moe_router_check_grads(args, grads));
    if (!grads->drouter_logits) return NULL;
    const parity_tensor *saved_scores;
    PARITY_TRY(parity_saved_get(saved, 0, &saved_scores));
    parity_dtype dtype = args->router_logits->dtype;
    int64_t top_k = args->top_k;
    bool deepseek = args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3;

    int64_t *indices = NULL;
    parity_cpu_values scores = {0}, dweights = {0}, dlogits = {0};
    double *dchosen = malloc((size_t)top_k * sizeof(double)); // gradient of the chosen scores
    parity_error *error = dchosen ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "moe_router: backward scratch");
    if (!error) error = parity_cpu_indices_load(args->expert_indices, "moe_router expert_indices", &indices);
    if (!error) error = parity_cpu_values_load(saved_scores, "moe_router saved scores", &scores);
    if (!error) error = parity_cpu_values_load(grads->drouting_weights, "moe_router drouting_weights", &dweights);
    if (!error) error = parity_cpu_values_new(tokens * experts, &dlogits);
    for (int64_t i = 0; !error && i < tokens * top_k; i++)
        if (indices[i] < 0 || indices[i] >= experts)
            error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                 "moe_router: expert index %lld at token %lld, slot %lld is outside [0, %lld)",
                                 (long long)indices[i], (long long)(i / top_k), (long long)(i % top_k), (long long)experts);
    if (error) goto done;
    double scaling = parity_round_compute(args->routed_scaling_factor, dtype);
    for (int64_t n = 0; n < tokens; n++) {
        const double *score = scores.data + n * experts, *g = dweights.data + n * top_k;
        const int64_t *chosen = indices + n * top_k;
        double *dlogit = dlogits.data + n * experts; // holds d(score) first, then d(logit)
        for (int64_t k = 0; k < top_k; k++) dchosen[k] = deepseek ? parity_round_compute(g[k] * scaling, dtype) : g[k];
        if (args->norm_topk_prob) {
            double denominator = normalizer(args, score, chosen, dtype), ddenominator = 0;
            for (int64_t k = 0; k < top_k; k++) {
                double quotient = parity_round_compute(
                    parity_round_compute(score[chosen[k]] / denominator, dtype) / denominator, dtype);
                ddenominator = parity_round_compute(ddenominator + parity_round_compute(-dchosen[k] * quotient, dtype), dtype);
            }
            for (int64_t k = 0; k < top_k; k++)
                dchosen[k] = parity_round_compute(parity_round_compute(dchosen[k] / denominator, dtype) + ddenominator, dtype);
        }
        for (int64_t k = 0; k < top_k; k++) dlogit[chosen[k]] = dchosen[k];
        if (deepseek) {
            for (int64_t j = 0; j < experts; j++) // sigmoid backward: dy * (1 - y) * y
                dlogit[j] = parity_round_compute(
                    parity_round_compute(dlogit[j] * parity_round_compute(1.0 - score[j], dtype), dtype) * score[j], dtype);
        } else { // softmax(dtype=float32) backward: products rounded to f32 (the softmax's output dtype)
            parity_routing_softmax_backward(score, dlogit, experts, parity_compute_dtype(dtype), dlogit);
        }
    }
    parity_cpu_values_store(grads->drouter_logits, dlogits.data);
done:
    parity_cpu_values_free(&scores);
    parity_cpu_values_free(&dweights);
    parity_cpu_values_free(&dlogits);
    free(indices);
    free(dchosen);
    return error;
}

static const parity_moe_router_kernels moe_router_eager_kernels = {moe_router_eager_forward, moe_router_eager_backward};

PARITY_BACKEND_REGISTRATION(moe_router, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_MOE_ROUTER,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &moe_router_eager_kernels,
        .description = "reference MoE router: softmax top-k (Qwen3-MoE) and DeepSeek-V3 grouped sigmoid, f64/f32/bf16",
    });
}
