// load_balancing_loss.h: the Switch-Transformer auxiliary loss of MoE models, exactly HF
// transformers 5.17's load_balancing_loss_func(gate_logits, num_experts, top_k, attention_mask=None)
// (Qwen3-MoE, Qwen3.5-MoE; the CausalLM adds router_aux_loss_coef * loss). In transformers 5.x the
// router records its raw logits as "router_logits" and this function applies the softmax itself.
// The model concatenates the router logits of all its MoE layers, layer after layer:
//   for each layer l:  p = softmax(logits_l) (in the logits' dtype: bf16 probabilities for bf16)
//                      count[e] += #tokens whose top-k of p contains e
//                      prob_sum[e] += sum over the layer's tokens of float(p[:, e])
//   tokens_per_expert = count / (L * N)     router_prob_per_expert = prob_sum / (L * N)
//   loss = sum_e(tokens_per_expert * router_prob_per_expert) * E
// (the same number as the K x E one-hot form of transformers 4.x). Kernel-selection field
// load_balancing_loss_implementation; backends register under op "load_balancing_loss".
// Gradient: dloss -> dlogits through router_prob_per_expert only (the top-k counts are discrete).
// Checked against transformers 5.17 / PyTorch 2.11 on an H200: bf16 dlogits bit-identical.
//
// dtypes: router_logits f64, f32 or bf16; loss (a 0-d tensor) f32 for f32 and bf16 logits, f64 for
// f64 (HF computes the sums in f32 even for an fp64 model via .float(); parity keeps f64 pure).
#ifndef PARITY_LOAD_BALANCING_LOSS_H
#define PARITY_LOAD_BALANCING_LOSS_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_load_balancing_loss_args {
    const parity_tensor *router_logits; // (L * N, E): every MoE layer's router logits, layer after layer
    int64_t num_layers;                 // L (0 counts as 1): the rows split into L equal blocks, summed per block
    int64_t top_k;                      // K, num_experts_per_tok, 1 <= K <= E
    parity_tensor *loss;                // () f32, or f64 for f64 logits
} parity_load_balancing_loss_args;

typedef struct parity_load_balancing_loss_grads {
    const parity_tensor *dloss;   // ()
    parity_tensor *drouter_logits; // (L * N, E), overwritten; may be NULL
} parity_load_balancing_loss_grads;

typedef struct parity_load_balancing_loss_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_load_balancing_loss_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_load_balancing_loss_args *args,
                              const parity_saved *saved, const parity_load_balancing_loss_grads *grads);
} parity_load_balancing_loss_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_load_balancing_loss_op;

// Shared argument validation, naming the op and the tensor in every message. Returns the rows
// (L * N), E and L (>= 1).
parity_error *parity_load_balancing_loss_check(const parity_load_balancing_loss_args *args, int64_t *rows,
                                               int64_t *experts, int64_t *layers);
parity_error *parity_load_balancing_loss_check_grads(const parity_load_balancing_loss_args *args,
                                                     const parity_load_balancing_loss_grads *grads);
// The dtype of the loss for logits of `dtype`: f64 for f64, f32 otherwise.
parity_dtype parity_load_balancing_loss_dtype(parity_dtype logits_dtype);

#ifdef __cplusplus
}
#endif
#endif
