// eager.cu: the reference MoE router on CUDA (value "eager"): eager.c's computation with one thread
// per token, both router kinds of moe_router.h, the same order of operations and tie rule
// (routing_math.cuh). Saves the per-expert scores (N, E) in the compute precision (softmax
// probabilities or sigmoid scores); backward is eager.c's formula per token.
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/moe_router/routing_math.cuh"

extern "C" {
#include "ops/moe_router/moe_router.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

struct router_shape {
    int64_t tokens, experts, top_k;
    bool deepseek, norm_topk_prob;
    int64_t groups, topk_group;
    double routed_scaling_factor;
};

// Scratch rows of one token (device memory, one row per token).
template <typename C> struct router_scratch_rows {
    C *choice;            // (N, E) DeepSeek-V3 scores for choice (s + bias, -inf outside the kept groups)
    C *group_scores;      // (N, n_group)
    int64_t *groups;      // (N, n_group) the kept groups
};

// sum of the chosen scores (left to right), + 1e-20 for DeepSeek-V3: the normalizer of the weights.
template <typename C>
__device__ C router_normalizer(const router_shape &shape, const C *score, const int64_t *chosen) {
    C sum = 0;
    for (int64_t k = 0; k < shape.top_k; k++) sum += score[chosen[k]];
    if (shape.deepseek) sum += (C)1e-20;
    return sum;
}

// DeepSeek-V3's group-limited choice of one token: scores (E) -> chosen (K), torch.topk(sorted=False) order.
template <typename C>
__device__ void deepseek_choose(const router_shape &shape, const C *score, const C *bias, C *choice, C *group_scores,
                                int64_t *groups, int64_t *chosen) {
    int64_t group_size = shape.experts / shape.groups;
    for (int64_t j = 0; j < shape.experts; j++) choice[j] = score[j] + bias[j];
    for (int64_t g = 0; g < shape.groups; g++) {
        int64_t best[2];
        routing_top_k_sorted(choice + g * group_size, group_size, 2, best);
        group_scores[g] = choice[g * group_size + best[0]] + choice[g * group_size + best[1]];
    }
    routing_top_k_sorted(group_scores, shape.groups, shape.topk_group, groups);
    for (int64_t g = 0; g < shape.groups; g++) {
        bool kept = false;
        for (int64_t i = 0; i < shape.topk_group; i++) kept = kept || groups[i] == g;
        if (!kept)
            for (int64_t j = g * group_size; j < (g + 1) * group_size; j++) choice[j] = -INFINITY;
    }
    routing_top_k_unsorted(choice, shape.experts, shape.top_k, chosen);
}

template <parity_dtype D>
__global__ void moe_router_forward_tokens(router_shape shape, const typename scalar<D>::storage *logits,
                                          const typename scalar<D>::compute *bias, typename scalar<D>::compute *scores,
                                          router_scratch_rows<typename scalar<D>::compute> scratch, int64_t *indices,
                                          void *weights, parity_dtype weights_dtype) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t E = shape.experts, K = shape.top_k;
    C scaling = (C)shape.routed_scaling_factor;
    PARITY_CUDA_FOR_EACH(n, shape.tokens) {
        const typename S::storage *row = logits + n * E;
        C *score = scores + n * E;
        int64_t *chosen = indices + n * K;
        if (shape.deepseek) {
            for (int64_t j = 0; j < E; j++) score[j] = C(1) / (C(1) + precise_exp(-S::load(row[j]))); // sigmoid
            deepseek_choose(shape, score, bias, scratch.choice + n * E, scratch.group_scores + n * shape.groups,
                            scratch.groups + n * shape.groups, chosen);
        } else {
            routing_softmax<D>(row, E, false, score);
            routing_top_k_sorted(score, E, K, chosen);
        }
        C denominator = shape.norm_topk_prob ? router_normalizer(shape, score, chosen) : C(1);
        for (int64_t k = 0; k < K; k++) {
            C value = score[chosen[k]];
            if (shape.norm_topk_prob) value = value / denominator;
            if (shape.deepseek) value = value * scaling;
            store_f64(weights, weights_dtype, n * K + k, (double)value);
        }
    }
}

// Backward of one token (see eager.c): d(weights) -> d(scores) of the chosen experts -> d(logits).
template <parity_dtype D>
__global__ void moe_router_backward_tokens(router_shape shape, const typename scalar<D>::compute *scores,
                                           const int64_t *indices, const void *dweights, parity_dtype weights_dtype,
                                           typename scalar<D>::compute *dchosen_rows, typename scalar<D>::compute *dscore_rows,
                                           typename scalar<D>::storage *dlogits) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t E = shape.experts, K = shape.top_k;
    C scaling = (C)shape.routed_scaling_factor;
    PARITY_CUDA_FOR_EACH(n, shape.tokens) {
        const C *score = scores + n * E;
        const int64_t *chosen = indices + n * K;
        C *dchosen = dchosen_rows + n * K, *dscore = dscore_rows + n * E;
        for (int64_t k = 0; k < K; k++) {
            C g = (C)load_f64(dweights, weights_dtype, n * K + k);
            dchosen[k] = shape.deepseek ? g * scaling : g;
        }
        if (shape.norm_topk_prob) {
            C denominator = router_normalizer(shape, score, chosen), ddenominator = 0;
            for (int64_t k = 0; k < K; k++) {
                C quotient = (score[chosen[k]] / denominator) / denominator;
                ddenominator += -dchosen[k] * quotient;
            }
            for (int64_t k = 0; k < K; k++) dchosen[k] = dchosen[k] / denominator + ddenominator;
        }
        for (int64_t j = 0; j < E; j++) dscore[j] = 0;
        for (int64_t k = 0; k < K; k++) dscore[chosen[k]] = dchosen[k];
        if (shape.deepseek) {
            for (int64_t j = 0; j < E; j++) dscore[j] = dscore[j] * (C(1) - score[j]) * score[j]; // sigmoid backward
        } else { // softmax backward, products kept in the compute precision (the softmax's output dtype)
            C sum = 0;
            for (int64_t j = 0; j < E; j++) {
                dscore[j] = dscore[j] * score[j];
                sum += dscore[j];
            }
            for (int64_t j = 0; j < E; j++) dscore[j] = dscore[j] - score[j] * sum;
        }
        for (int64_t j = 0; j < E; j++) dlogits[n * E + j] = S::store(dscore[j]);
    }
}

router_shape shape_of(const parity_moe_router_args *args, int64_t tokens, int64_t experts) {
    router_shape shape = {};
    shape.tokens = tokens;
    shape.experts = experts;
    shape.top_k = args->top_k;
    shape.deepseek = args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3;
    shape.norm_topk_prob = args->norm_topk_prob;
    shape.groups = shape.deepseek ? args->n_group : 1;
    shape.topk_group = shape.deepseek ? args->topk_group : 1;
    shape.routed_scaling_factor = args->routed_scaling_factor;
    return shape;
}

parity_error *check_devices(const parity_moe_router_args *args) {
    parity_device device = args->router_logits->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return parity_cuda_check_tensor("moe_router", "router_logits", args->router_logits, cuda_device(0));
    PARITY_TRY(parity_cuda_check_tensor("moe_router", "router_logits", args->router_logits, device));
    if (args->kind == PARITY_MOE_ROUTER_DEEPSEEK_V3)
        PARITY_TRY(parity_cuda_check_tensor("moe_router", "correction_bias", args->correction_bias, device));
    PARITY_TRY(parity_cuda_check_tensor("moe_router", "routing_weights", args->routing_weights, device));
    PARITY_TRY(parity_cuda_check_tensor("moe_router", "expert_indices", args->expert_indices, device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

parity_error *moe_router_cuda_eager_forward(const parity_exec *exec, const parity_moe_router_args *args,
                                            parity_saved *saved) {
    int64_t tokens, experts;
    PARITY_TRY(parity_moe_router_check(args, &tokens, &experts));
    PARITY_TRY(check_devices(args));
    router_shape shape = shape_of(args, tokens, experts);
    parity_device device = args->router_logits->device;
    parity_dtype compute = args->router_logits->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    int64_t saved_shape[2] = {tokens, experts};
    parity_tensor *scores;
    PARITY_TRY(parity_saved_alloc(saved, &scores, compute, device, 2, saved_shape));
    scoped_tensor choice, group_scores, groups;
    if (shape.deepseek) {
        PARITY_TRY(choice.alloc_1d(compute, device, tokens * experts));
        PARITY_TRY(group_scores.alloc_1d(compute, device, tokens * shape.groups));
        PARITY_TRY(groups.alloc_1d(PARITY_I64, device, tokens * shape.groups));
    }
    return dispatch_float(args->router_logits->dtype, "moe_router", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = scalar<D>;
        using C = typename S::compute;
        router_scratch_rows<C> rows = {choice.data<C>(), group_scores.data<C>(), groups.data<int64_t>()};
        const C *bias = shape.deepseek ? static_cast<const C *>(args->correction_bias->data) : nullptr;
        moe_router_forward_tokens<D><<<grid_for(tokens, 128), 128, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const typename S::storage *>(args->router_logits->data), bias,
            static_cast<C *>(scores->data), rows, static_cast<int64_t *>(args->expert_indices->data),
            args->routing_weights->data, args->routing_weights->dtype);
        PARITY_CUDA_TRY_LAUNCH("moe_router_forward_tokens");
        return NULL;
    });
}

// Every index in [0, E), read on the host ("expert index 9 at token 3, slot 1 is outside [0, 8)").
parity_error *check_indices(const parity_tensor *indices, int64_t experts, int64_t top_k) {
    scoped_tensor host;
    PARITY_TRY(parity_tensor_to(&host.tensor, indices, PARITY_CPU, PARITY_I64));
    const int64_t *values = host.data<int64_t>();
    for (int64_t i = 0; i < host.tensor.numel; i++)
        if (values[i] < 0 || values[i] >= experts)
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "moe_router: expert index %lld at token %lld, slot %lld is outside [0, %lld)",
                                (long long)values[i], (long long)(i / top_k), (long long)(i % top_k), (long long)experts);
    return NULL;
}

parity_error *moe_router_cuda_eager_backward(const parity_exec *exec, const parity_moe_router_args *args,
                                             const parity_saved *saved, const parity_moe_router_grads *grads) {
    int64_t tokens, experts;
    PARITY_TRY(parity_moe_router_check(args, &tokens, &experts));
    PARITY_TRY(parity_moe_router_check_grads(args, grads));
    if (!grads->drouter_logits) return NULL;
    PARITY_TRY(check_devices(args));
    parity_device device = args->router_logits->device;
    PARITY_TRY(parity_cuda_check_tensor("moe_router", "drouting_weights", grads->drouting_weights, device));
    PARITY_TRY(parity_cuda_check_tensor("moe_router", "drouter_logits", grads->drouter_logits, device));
    const parity_tensor *scores;
    PARITY_TRY(parity_saved_get(saved, 0, &scores));
    PARITY_TRY(check_indices(args->expert_indices, experts, args->top_k));
    router_shape shape = shape_of(args, tokens, experts);
    parity_dtype compute = args->router_logits->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    scoped_tensor dchosen, dscore;
    PARITY_TRY(dchosen.alloc_1d(compute, device, tokens * args->top_k));
    PARITY_TRY(dscore.alloc_1d(compute, device, tokens * experts));
    return dispatch_float(args->router_logits->dtype, "moe_router", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = scalar<D>;
        using C = typename S::compute;
        moe_router_backward_tokens<D><<<grid_for(tokens, 128), 128, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const C *>(scores->data), static_cast<const int64_t *>(args->expert_indices->data),
            grads->drouting_weights->data, grads->drouting_weights->dtype, dchosen.data<C>(), dscore.data<C>(),
            static_cast<typename S::storage *>(grads->drouter_logits->data));
        PARITY_CUDA_TRY_LAUNCH("moe_router_backward_tokens");
        return NULL;
    });
}

const parity_moe_router_kernels moe_router_cuda_eager_kernels = {moe_router_cuda_eager_forward,
                                                                 moe_router_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(moe_router, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_MOE_ROUTER;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &moe_router_cuda_eager_kernels;
    backend.description = "reference MoE router on CUDA: softmax top-k (Qwen3-MoE) and DeepSeek-V3 grouped sigmoid, "
                          "one thread per token, f64/f32/bf16";
    return parity_registry_add(&backend);
}
