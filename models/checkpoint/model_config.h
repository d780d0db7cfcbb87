// model_config.h: an HF config.json as one struct for every model parity implements (the
// model_types of models/model_traits.c). model_type is looked up once into its traits row, which
// decides the fields read (those of its kinds) and the defaults of absent ones. Reads both RoPE
// spellings (transformers 5 `rope_parameters`, and `rope_theta` + `rope_scaling`), defaults
// head_dim to hidden_size / num_attention_heads, and validates every field it uses: a missing or
// mistyped field is an error naming the file and the field.
#ifndef PARITY_MODEL_CONFIG_H
#define PARITY_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "models/model_traits.h"
#include "ops/core/error.h"
#include "ops/rotary/rope_description.h"

#define PARITY_MAX_LAYERS 256

typedef enum parity_layer_kind {
    PARITY_LAYER_FULL_ATTENTION = 0,
    PARITY_LAYER_SLIDING_ATTENTION,
    PARITY_LAYER_LINEAR_ATTENTION,          // GatedDeltaNet
} parity_layer_kind;

typedef struct parity_model_config {
    char path[512];                         // where it was read from (for messages)
    char model_type[64];
    const parity_model_traits *traits;      // the row of model_type: what the blocks build
    int64_t vocab_size, hidden_size, intermediate_size, num_hidden_layers;
    int64_t num_attention_heads, num_key_value_heads, head_dim;
    double rms_norm_eps;
    bool tie_word_embeddings;
    bool attention_bias;                    // q/k/v projections have a bias (the row's qkv_bias rule)
    bool attention_out_bias;                // o_proj has a bias (the row's o_bias rule)
    bool mlp_bias;                          // the row's mlp_bias rule
    int64_t max_position_embeddings;
    int64_t pad_token_id;                   // -1 when null: the embedding's padding_idx (no gradient)
    int64_t sliding_window;                 // 0 = none
    parity_rope_description rope;           // rope_parameters / rope_scaling, partial factor, interleave
    parity_layer_kind layer_kinds[PARITY_MAX_LAYERS];

    // MoE (qwen3_moe, qwen3_5_moe, deepseek_v3)
    int64_t num_experts;                    // num_experts / num_local_experts / n_routed_experts; 0 = dense
    int64_t num_experts_per_tok, moe_intermediate_size;
    bool norm_topk_prob;
    int64_t decoder_sparse_step;
    bool mlp_only_layers[PARITY_MAX_LAYERS];
    double router_aux_loss_coef;
    bool output_router_logits;
    int64_t shared_expert_intermediate_size; // qwen3_5_moe / qwen3_next: gated shared expert

    // DeepSeek-V3 (MLA + grouped sigmoid routing)
    int64_t q_lora_rank;                    // 0 = none
    int64_t kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int64_t n_group, topk_group, n_shared_experts, first_k_dense_replace;
    double routed_scaling_factor;

    // Qwen3.5 / Qwen3-Next linear attention (GatedDeltaNet)
    int64_t linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim;
    int64_t linear_conv_kernel_dim;
} parity_model_config;

// Reads and validates `path` (a config.json).
parity_error *parity_model_config_read(const char *path, parity_model_config *out);
// Parses config JSON text; `path` only names the source in messages.
parity_error *parity_model_config_parse(const char *json_text, const char *path, parity_model_config *out);

bool parity_model_config_is_moe_layer(const parity_model_config *config, int64_t layer);

#endif
