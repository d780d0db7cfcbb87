// blocks.h: the layer pieces the decoder families share: standard attention (llama, qwen2, qwen3,
// seed_oss, qwen3_moe; optional q/k norm, qkv/o biases, output gate), the SwiGLU MLP, the MoE block
// (softmax or DeepSeek routing, optional shared expert), MLA (DeepSeek-V3) and GatedDeltaNet.
#ifndef PARITY_BLOCKS_H
#define PARITY_BLOCKS_H

#include "models/families/family_support.h"

// What distinguishes the attention-model variants, derived from model_type and config.
typedef struct block_traits {
    bool qk_norm;                    // qwen3, qwen3_moe, qwen3_5*, qwen3_next: RMSNorm on q and k per head
    bool output_gate;                // qwen3_5*, qwen3_next: q_proj also yields a sigmoid gate for the output
    parity_rms_norm_variant norm;    // (1 + w) for qwen3_5* / qwen3_next
    bool qkv_bias, o_bias;
} block_traits;
block_traits block_traits_of(const parity_model_config *config);

// x (N, H) -> (N, H)
parity_error *block_attention(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
parity_error *block_mla(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
parity_error *block_gated_delta_net(family_context *context, int64_t layer, parity_variable *x, parity_variable **out);
// SwiGLU MLP of HF module `module` (gate_proj, up_proj, down_proj)
parity_error *block_mlp(family_context *context, const char *module, parity_variable *x, parity_variable **out);
// MoE of layer `layer`; appends this layer's router output for the aux loss to *router_outputs.
parity_error *block_moe(family_context *context, int64_t layer, parity_variable *x, parity_variable **out,
                        parity_variable **router_output);

// The rotary description of the model (partial factor, layout, scaling) from its config.
void block_rope_description(const parity_model_config *config, parity_rope_description *out);

#endif
