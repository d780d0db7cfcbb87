// moe_router.h: MoE routing from router logits to (routing weights, expert indices), as HF
// transformers 5.17 computes it. The router linear itself is the model's (linear op):
//   softmax top-k (Qwen3MoeTopKRouter, Qwen3_5MoeTopKRouter):
//     p = softmax(logits) in f32; top-k of p (sorted, descending); if norm_topk_prob
//     w = p_k / sum(p_k) (f32); w is cast to the activation dtype. Qwen3.5-MoE always normalizes.
//   DeepSeek-V3 (DeepseekV3TopkRouter):
//     s = sigmoid(logits); c = s + e_score_correction_bias; group score = sum of the top-2 of c in
//     each of n_group contiguous groups; keep the topk_group best groups, c = -inf elsewhere;
//     top-k of c (torch.topk sorted=False order, see routing_math.h); w = s at the chosen experts
//     (no bias); if norm_topk_prob w /= (sum(w) + 1e-20); w *= routed_scaling_factor. HF keeps w in
//     f32 (it is not cast back), and computes the router linear in f32:
//     F.linear(hidden.float(), weight.float()). A model must do the same: call the linear op in f32
//     (f64 in f64 runs) and pass f32 logits here. e_score_correction_bias is an f32 buffer in HF
//     (_keep_in_fp32_modules_strict).
// The aux loss does not use this op's output: in transformers 5.x the router returns the raw
// logits as "router_logits" and load_balancing_loss_func applies the softmax itself (see
// ops/load_balancing_loss), so a model passes the same logits to both ops.
//
// Gradients flow dweights -> dlogits only; the indices are discrete. Finite differences are only
// meaningful away from ties.
//
// Ties: the chosen set prefers the lower expert index at the k-th place (CUDA gatherTopK). Within
// the set, exactly equal scores are listed lower index first; CUDA's sorted=True path (an unstable
// bitonic sort) may list them the other way round (seen on an H200: [1, 0, 3] for equal experts 0
// and 1). Tied slots carry identical weights, so only the slot layout can differ from HF.
//
// dtypes: router_logits f64, f32 or bf16; arithmetic in f64 for f64 logits, else f32 (HF: softmax
// dtype=float32, DeepSeek-V3 all f32). HF in an fp64 model still routes in f32 (softmax
// dtype=torch.float, DeepSeek-V3's .type(torch.float32)); parity keeps f64 runs pure f64, and the
// fp64 reference runs differ from it by ~1e-7 relative.
// routing_weights: f64 for f64 logits, else f32 or bf16 (rounded once into whichever the caller
// allocates: the activation dtype for Qwen, f32 for DeepSeek-V3). correction_bias: f64 for f64
// logits, else f32. expert_indices: int64. Gradients take the dtype of the tensor they belong to.
#ifndef PARITY_MOE_ROUTER_H
#define PARITY_MOE_ROUTER_H

#include <stdbool.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_MOE_ROUTER "moe_router"

typedef enum parity_moe_router_kind {
    PARITY_MOE_ROUTER_SOFTMAX_TOP_K = 0, // Qwen3-MoE, Qwen3.5-MoE (and Mixtral-style routers)
    PARITY_MOE_ROUTER_DEEPSEEK_V3,       // sigmoid, group-limited top-k with score correction bias
} parity_moe_router_kind;

typedef struct parity_moe_router_args {
    const parity_tensor *router_logits;   // (N, E)
    const parity_tensor *correction_bias; // (E) e_score_correction_bias; DeepSeek-V3 only (NULL otherwise)
    parity_moe_router_kind kind;
    int64_t top_k;                        // K, num_experts_per_tok, 1 <= K <= E
    bool norm_topk_prob;
    int64_t n_group;                      // DeepSeek-V3: E % n_group == 0, E / n_group >= 2
    int64_t topk_group;                   // DeepSeek-V3: 1 <= topk_group <= n_group, K <= topk_group * E / n_group
    double routed_scaling_factor;         // DeepSeek-V3 (softmax top-k ignores it)
    parity_tensor *routing_weights;       // (N, K)
    parity_tensor *expert_indices;        // (N, K) int64
} parity_moe_router_args;

typedef struct parity_moe_router_grads {
    const parity_tensor *drouting_weights; // (N, K)
    parity_tensor *drouter_logits;         // (N, E), overwritten; may be NULL
} parity_moe_router_grads;

typedef struct parity_moe_router_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_moe_router_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_moe_router_args *args, const parity_saved *saved,
                              const parity_moe_router_grads *grads);
} parity_moe_router_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_moe_router_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N and E.
parity_error *parity_moe_router_check(const parity_moe_router_args *args, int64_t *tokens, int64_t *experts);
parity_error *parity_moe_router_check_grads(const parity_moe_router_args *args, const parity_moe_router_grads *grads);

#ifdef __cplusplus
}
#endif
#endif
