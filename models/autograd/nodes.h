// nodes.h: one function per op that a model calls. Each makes the output variables (owned by the
// tape) and hands the call to the generic op node (node_op.h), which runs the bound backend's forward
// through the op's descriptor and records the node for backward; the functions live in
// models/autograd/nodes/ by kind of op. `name` labels outputs for NaN reports ("model.layers.2.self_attn").
#ifndef PARITY_NODES_H
#define PARITY_NODES_H

#include <stdbool.h>
#include <stdint.h>

#include "models/autograd/tape.h"
#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/concat/concat.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/embedding/embedding.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/linear/linear.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/matmul/matmul.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/moe_router/moe_router.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rotary/rotary.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"
#include "ops/swiglu/swiglu.h"

// (N, H) -> (N, H)
parity_error *parity_node_rms_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                   parity_variable *weight, double eps, parity_rms_norm_variant variant, parity_variable **out);

// hidden (N, H), weight (V, H), targets (N) int64 -> loss () ; logits (N, V) when `logits` is non-NULL.
parity_error *parity_node_cross_entropy(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *hidden, parity_variable *weight, const parity_tensor *targets,
                                        int64_t num_items_in_batch, parity_variable **loss, parity_variable **logits);

// query (N, Hq, D), key (N, Hk, D), value (N, Hk, Dv), cu_seqlens (S + 1) -> (N, Hq, Dv)
parity_error *parity_node_attention(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                    parity_variable *key, parity_variable *value, const parity_tensor *cu_seqlens, double scale,
                                    bool causal, int64_t sliding_window, parity_variable **out);

// Plain tensors a node reads but does not differentiate (ids, targets, cu_seqlens) are kept by
// pointer to their storage until backward: their data must outlive the tape's backward.

// input (..., in) -> (..., out); bias may be NULL
parity_error *parity_node_linear(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                 parity_variable *weight, parity_variable *bias, parity_variable **out);

// batched matmul per ops/matmul/matmul.h
parity_error *parity_node_matmul(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                                 parity_variable *b, bool transpose_a, bool transpose_b, parity_variable **out);

// ids (N) int64 (not differentiable) -> (N, H); padding_idx >= 0: that row gets no gradient (HF pad_token_id)
parity_error *parity_node_embedding(parity_tape *tape, const parity_backend *backend, const char *name,
                                    const parity_tensor *ids, parity_variable *weight, int64_t padding_idx,
                                    parity_variable **out);

parity_error *parity_node_add(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                              parity_variable *b, parity_variable **out);

// input (N, D) * sigmoid(gate), gate (N, D) or (N, 1)
parity_error *parity_node_sigmoid_gate(parity_tape *tape, const parity_backend *backend, const char *name,
                                       parity_variable *input, parity_variable *gate, parity_variable **out);

// along the last dimension
parity_error *parity_node_concat(parity_tape *tape, const parity_backend *backend, const char *name,
                                 parity_variable *const *parts, int count, parity_variable **out);

// input (..., D) -> parts (..., sizes[i]); sum(sizes) == D
parity_error *parity_node_split(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                const int64_t *sizes, int count, parity_variable **parts);

// (N, 1, D) -> (N, heads, D)
parity_error *parity_node_broadcast_heads(parity_tape *tape, const parity_backend *backend, const char *name,
                                          parity_variable *input, int64_t heads, parity_variable **out);

// (N, C), weight (C, K), cu_seqlens (S + 1) -> (N, C)
parity_error *parity_node_causal_conv1d(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *input, parity_variable *weight, const parity_tensor *cu_seqlens,
                                        parity_causal_conv1d_activation activation, parity_variable **out);

// (N, D) -> (N, D)
parity_error *parity_node_l2_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                  double eps, parity_variable **out);

// query/key (N, Hk, Dk), value (N, Hv, Dv), g/beta (N, Hv) -> (N, Hv, Dv)
parity_error *parity_node_gated_delta_rule(parity_tape *tape, const parity_backend *backend, const char *name,
                                           parity_variable *query, parity_variable *key, parity_variable *value,
                                           parity_variable *g, parity_variable *beta, const parity_tensor *cu_seqlens,
                                           double scale, bool use_qk_l2norm, parity_variable **out);

// a, b (N, Hv), A_log, dt_bias (Hv) -> g (N, Hv) in the compute dtype, beta (N, Hv)
parity_error *parity_node_gdn_gating(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                                     parity_variable *b, parity_variable *A_log, parity_variable *dt_bias, parity_variable **g,
                                     parity_variable **beta);

// ---- Tape-level glue (no registry op: conversions, copies and scalar arithmetic) ----
// On any device; the variables must live on the tape's device (a USAGE error names the mismatch).

// dtype conversion with exact rounding; backward converts the gradient back (rounded to input's dtype).
parity_error *parity_node_cast(parity_tape *tape, const char *name, parity_variable *input, parity_dtype dtype,
                               parity_variable **out);

// concatenation along the FIRST dimension (row stacking), e.g. per-layer router logits (N, E) -> (L*N, E); backward slices.
parity_error *parity_node_stack_rows(parity_tape *tape, const char *name, parity_variable *const *parts, int count,
                                     parity_variable **out);

// scalar combination out = weight_a * a + weight_b * b for scalar (numel 1) variables, computed in f64 and stored in a's dtype
// (the loss + router_aux_loss_coef * aux_loss). b's dtype may differ from a's.
parity_error *parity_node_weighted_sum(parity_tape *tape, const char *name, parity_variable *a, double weight_a,
                                       parity_variable *b, double weight_b, parity_variable **out);

// ---- model ops with kernel-selection fields (lead) ----
// query (N, Hq, D), key (N, Hk, D), positions (N) -> rotated query and key
parity_error *parity_node_rotary(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                 parity_variable *key, const parity_tensor *positions, const parity_rope_description *rope,
                                 parity_variable **query_out, parity_variable **key_out);
// silu(gate) * up, (N, I)
parity_error *parity_node_swiglu(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *gate,
                                 parity_variable *up, parity_variable **out);
// Qwen3.5 gated RMSNorm: input, gate (N, D), weight (D)
parity_error *parity_node_rms_norm_gated(parity_tape *tape, const parity_backend *backend, const char *name,
                                         parity_variable *input, parity_variable *gate, parity_variable *weight, double eps,
                                         parity_variable **out);
typedef struct parity_node_router_options {
    parity_moe_router_kind kind;
    int64_t top_k;
    bool norm_topk_prob;
    int64_t n_group, topk_group;       // DeepSeek-V3
    double routed_scaling_factor;      // DeepSeek-V3
} parity_node_router_options;
// router_logits (N, E) -> routing weights (N, K) in weights_dtype, expert indices (N, K) int64
parity_error *parity_node_moe_router(parity_tape *tape, const parity_backend *backend, const char *name,
                                     const parity_node_router_options *options, parity_variable *logits,
                                     const parity_tensor *correction_bias, parity_dtype weights_dtype,
                                     parity_variable **weights, parity_variable **indices);
// hidden (N, H), fused experts, routing -> (N, H)
parity_error *parity_node_moe_experts(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *hidden,
                                      parity_variable *gate_up_proj, parity_variable *down_proj, parity_variable *expert_indices,
                                      parity_variable *routing_weights, parity_variable **out);
// every MoE layer's raw router logits stacked (L * N, E) -> aux loss ()
parity_error *parity_node_load_balancing_loss(parity_tape *tape, const parity_backend *backend, const char *name,
                                              parity_variable *router_logits, int64_t num_layers, int64_t top_k,
                                              parity_variable **loss);

#endif
