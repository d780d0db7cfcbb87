// blocks.h: the layer pieces the decoder families share: standard attention (llama, qwen2, qwen3,
// seed_oss, qwen3_moe; optional q/k norm, qkv/o biases, output gate), the SwiGLU MLP, the MoE block
// (softmax or DeepSeek routing, optional shared expert), MLA (DeepSeek-V3) and GatedDeltaNet.
// Which piece and which variant a model uses is its traits row (config->traits, models/model_traits.h).
#ifndef PARITY_BLOCKS_H
#define PARITY_BLOCKS_H

#include "models/families/family_support.h"

// x (N, H) -> (N, H)
parity_error *block_attention(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
parity_error *block_mla(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
parity_error *block_gated_delta_net(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
// SwiGLU MLP of HF module `module` (gate_proj, up_proj, down_proj)
parity_error *block_mlp(family_context *context, const char *module, parity_variable *x, parity_variable **out);
// MoE of layer `layer`; appends this layer's router output for the aux loss to *router_outputs.
parity_error *block_moe(family_context *context, int64_t layer, parity_variable *x, parity_variable **out,
                        parity_variable **router_output);

// attention(q, k, v) over the batch's documents: q (N, Hq, D), k (N, Hk, D), v (N, Hk, Dv) -> (N, Hq, Dv).
// Under sequence parallel (Ulysses) the heads are exchanged for the whole sequence around it
// (models/parallel/parallel_nodes.h); k/v with one head are repeated for the ranks first.
parity_error *block_attend(family_context *context, const char *module, parity_variable *query, parity_variable *key,
                           parity_variable *value, double scale, int64_t window, parity_variable **out);

// The rotary description of the model (partial factor, layout, scaling) from its config.
void block_rope_description(const parity_model_config *config, parity_rope_description *out);

#endif
