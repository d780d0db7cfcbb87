// model_traits.h: every config.json model_type parity implements, as data: one row per type in
// model_traits.c, the one list of supported types. The type string is looked up once, when
// config.json is read (models/checkpoint/model_config.c), into the row the config carries
// (parity_model_config.traits); the config reader and the blocks (models/families/) read the row,
// never the string. A row names the blocks that build the model (mixers, MoE router and layers,
// shared expert), their variants (norm, q/k norm, output gate, biases, rotary layout) and the
// defaults HF's config class gives fields a config.json leaves out. Each kind below names the
// config.json fields it reads: a type reads only the fields of its kinds, so a field its HF config
// class does not have is ignored, as transformers ignores it.
// Adding a model whose blocks exist: one row in model_traits.c, plus a reader in model_config.c for
// a config field no kind reads yet.
#ifndef PARITY_MODEL_TRAITS_H
#define PARITY_MODEL_TRAITS_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"
#include "ops/op_id.h"
#include "ops/moe_router/moe_router.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rotary/rope_description.h"

struct parity_model_family;

// Where each layer's mixer comes from.
typedef enum parity_layer_pattern {
    PARITY_LAYERS_ALL_FULL = 0,  // every layer full attention (no layer_types field)
    PARITY_LAYERS_SLIDING,       // layer_types of full_attention / sliding_attention (absent: all full);
                                 // reads layer_types, use_sliding_window, sliding_window
    PARITY_LAYERS_HYBRID,        // layer_types of full_attention / linear_attention; absent: every
                                 // full_attention_interval-th layer (default 4) full, the others linear
} parity_layer_pattern;

// The mixer of full and sliding attention layers.
typedef enum parity_attention_kind {
    PARITY_ATTENTION_STANDARD = 0, // q/k/v/o projections (families/attention_block.c)
    PARITY_ATTENTION_MLA,          // DeepSeek-V3 latent attention (families/mla_block.c); reads q_lora_rank,
                                   // kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_interleave
} parity_attention_kind;

// The GatedDeltaNet mixer of linear_attention layers (families/gated_delta_net_block.c); both kinds
// read linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim and
// linear_conv_kernel_dim. Only PARITY_LAYERS_HYBRID has linear layers.
typedef enum parity_linear_attention_kind {
    PARITY_LINEAR_ATTENTION_NONE = 0,
    PARITY_LINEAR_ATTENTION_SEPARATE, // qwen3_5: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a
    PARITY_LINEAR_ATTENTION_FUSED,    // qwen3_next: in_proj_qkvz and in_proj_ba, laid out per key head
} parity_linear_attention_kind;

// Which layers of an MoE model are MoE (when num_experts > 0).
typedef enum parity_moe_layers {
    PARITY_MOE_LAYERS_EVERY = 0,     // every layer
    PARITY_MOE_LAYERS_SPARSE_STEP,   // every decoder_sparse_step-th layer not in mlp_only_layers (reads both)
    PARITY_MOE_LAYERS_FIRST_K_DENSE, // every layer from first_k_dense_replace on (reads it)
} parity_moe_layers;

// The always-on expert beside the routed ones.
typedef enum parity_shared_expert {
    PARITY_SHARED_EXPERT_NONE = 0,
    PARITY_SHARED_EXPERT_GATED, // sigmoid(shared_expert_gate(x)) * shared_expert(x); reads shared_expert_intermediate_size
    PARITY_SHARED_EXPERT_PLAIN, // shared_experts(x), n_shared_experts x moe_intermediate_size wide; reads n_shared_experts
} parity_shared_expert;

// Where a projection's bias comes from.
typedef enum parity_bias_rule {
    PARITY_BIAS_NONE = 0,           // never
    PARITY_BIAS_ALWAYS,             // always (qwen2's q/k/v)
    PARITY_BIAS_ATTENTION_BIAS,     // config.json attention_bias (default false)
    PARITY_BIAS_ATTENTION_OUT_BIAS, // config.json attention_out_bias (default false)
    PARITY_BIAS_MLP_BIAS,           // config.json mlp_bias (default false)
} parity_bias_rule;

typedef struct parity_model_traits {
    const char *model_type;                     // config.json model_type
    const struct parity_model_family *family;   // builds it (models/families/)

    // mixers
    parity_layer_pattern layers;
    parity_attention_kind attention;
    parity_linear_attention_kind linear_attention;
    parity_rms_norm_variant norm;               // every RMSNorm of the decoder layers and the final norm
    bool qk_norm;                               // RMSNorm on q and k per head
    bool output_gate;                           // q_proj also yields a sigmoid gate for the attention output
    parity_bias_rule qkv_bias, o_bias, mlp_bias;

    // MoE
    bool moe;                                   // MoE layers when num_experts > 0; reads num_experts (or num_local_experts,
                                                // n_routed_experts), num_experts_per_tok, moe_intermediate_size,
                                                // norm_topk_prob; intermediate_size becomes optional
    parity_moe_router_kind router;              // DEEPSEEK_V3 reads n_group, topk_group, routed_scaling_factor and
                                                // has e_score_correction_bias; the router runs in f32
    parity_moe_layers moe_layers;
    parity_shared_expert shared_expert;
    bool load_balancing_loss;                   // Switch aux loss; reads router_aux_loss_coef, output_router_logits

    // defaults for fields config.json leaves out (HF's config class's)
    bool norm_topk_prob;
    parity_rotary_layout rope_layout;           // rope_interleave (read by MLA only)
    double partial_rotary_factor;               // 0: 1 (full rotary)
    bool tie_word_embeddings;
} parity_model_traits;

// Every op some supported model_type can call: the union of the `ops` of every row's family. A
// kernel-selection field whose op is outside it is used by no model parity builds.
void parity_model_traits_all_ops(parity_op_set *out);

// The row of `model_type`, or NULL when parity does not implement it.
const parity_model_traits *parity_model_traits_find(const char *model_type);
// The row of `model_type`, or a DATA error naming `path` (the config.json), the field and the known types.
parity_error *parity_model_traits_lookup(const char *model_type, const char *path, const parity_model_traits **out);

#endif
