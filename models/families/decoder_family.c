// decoder_family.c: what each decoder model needs: the ops it calls (with the variants it needs from
// them, so a backend that cannot do a variant is "not supported" instead of silently applied) and the
// names, shapes and initializers of its parameters (HF names), from the config and its traits row.
#include <stdio.h>
#include <stdlib.h>

#include "models/families/blocks.h"
#include "models/families/decoder_family.h"

static bool has_layer_kind(const parity_model_config *config, parity_layer_kind kind) {
    for (int64_t layer = 0; layer < config->num_hidden_layers; layer++)
        if (config->layer_kinds[layer] == kind) return true;
    return false;
}

static bool has_dense_mlp(const parity_model_config *config) {
    for (int64_t layer = 0; layer < config->num_hidden_layers; layer++)
        if (!parity_model_config_is_moe_layer(config, layer)) return true;
    return false;
}

static bool has_moe(const parity_model_config *config) {
    for (int64_t layer = 0; layer < config->num_hidden_layers; layer++)
        if (parity_model_config_is_moe_layer(config, layer)) return true;
    return false;
}

static parity_error *decoder_requirements(const parity_model_config *config, parity_op_requirement *out, size_t capacity,
                                          size_t *count) {
    family_requirements list = {out, capacity, 0};
    const parity_model_traits *traits = config->traits;
    bool mla = traits->attention == PARITY_ATTENTION_MLA;
    bool attention_layers = has_layer_kind(config, PARITY_LAYER_FULL_ATTENTION) || has_layer_kind(config, PARITY_LAYER_SLIDING_ATTENTION);
    PARITY_TRY(family_require(&list, PARITY_OP_EMBEDDING, 0, NULL));
    PARITY_TRY(family_require(&list, PARITY_OP_LINEAR, 0, NULL));
    PARITY_TRY(family_require(&list, PARITY_OP_ADD, 0, NULL));
    PARITY_TRY(family_require(&list, PARITY_OP_RMS_NORM, traits->norm == PARITY_RMS_NORM_OFFSET ? PARITY_CAP_OFFSET_WEIGHT : 0,
                              traits->norm == PARITY_RMS_NORM_OFFSET ? "the (1 + w) RMSNorm" : NULL));
    PARITY_TRY(family_require(&list, PARITY_OP_CROSS_ENTROPY, 0, NULL));
    if (attention_layers) {
        uint32_t attention = PARITY_CAP_VARLEN;
        if (config->num_key_value_heads < config->num_attention_heads && !mla) attention |= PARITY_CAP_GQA;
        if (has_layer_kind(config, PARITY_LAYER_SLIDING_ATTENTION)) attention |= PARITY_CAP_SLIDING_WINDOW;
        PARITY_TRY(family_require(&list, PARITY_OP_ATTENTION, attention, "packed documents (cu_seqlens)"));
        PARITY_TRY(family_require(&list, PARITY_OP_ROTARY,
                                  config->rope.partial_rotary_factor < 1 ? PARITY_CAP_PARTIAL_ROTARY : PARITY_CAP_VARLEN,
                                  config->rope.partial_rotary_factor < 1 ? "partial rotary (partial_rotary_factor < 1)"
                                                                         : "per-token positions of packed documents"));
    }
    if (traits->output_gate || has_layer_kind(config, PARITY_LAYER_LINEAR_ATTENTION)) {
        PARITY_TRY(family_require(&list, PARITY_OP_SPLIT, 0, NULL));
        PARITY_TRY(family_require(&list, PARITY_OP_SIGMOID_GATE, 0, NULL));
    }
    // fewer kv heads than query heads: a sequence-parallel layout with more ranks than kv heads repeats
    // them for its ranks (block_attend)
    if (!mla && config->num_key_value_heads < config->num_attention_heads) PARITY_TRY(family_require(&list, PARITY_OP_BROADCAST_HEADS, 0, NULL));
    if (mla) {
        PARITY_TRY(family_require(&list, PARITY_OP_SPLIT, 0, NULL));
        PARITY_TRY(family_require(&list, PARITY_OP_CONCAT, 0, NULL));
        PARITY_TRY(family_require(&list, PARITY_OP_BROADCAST_HEADS, 0, NULL));
    }
    if (has_layer_kind(config, PARITY_LAYER_LINEAR_ATTENTION)) {
        PARITY_TRY(family_require(&list, PARITY_OP_CAUSAL_CONV1D, PARITY_CAP_VARLEN, "packed documents (cu_seqlens)"));
        PARITY_TRY(family_require(&list, PARITY_OP_GATED_DELTA_RULE, PARITY_CAP_VARLEN, "packed documents (cu_seqlens)"));
        PARITY_TRY(family_require(&list, PARITY_OP_GDN_GATING, 0, NULL));
        PARITY_TRY(family_require(&list, PARITY_OP_RMS_NORM_GATED, 0, NULL));
        if (traits->linear_attention == PARITY_LINEAR_ATTENTION_FUSED) PARITY_TRY(family_require(&list, PARITY_OP_CONCAT, 0, NULL));
    }
    bool shared_expert = config->shared_expert_intermediate_size > 0 || config->n_shared_experts > 0;
    if (has_dense_mlp(config) || shared_expert) PARITY_TRY(family_require(&list, PARITY_OP_SWIGLU, 0, NULL));
    if (has_moe(config)) {
        PARITY_TRY(family_require(&list, PARITY_OP_MOE_ROUTER, 0, NULL));
        PARITY_TRY(family_require(&list, PARITY_OP_MOE_EXPERTS, 0, NULL));
        if (config->shared_expert_intermediate_size > 0) PARITY_TRY(family_require(&list, PARITY_OP_SIGMOID_GATE, 0, NULL));
        if (decoder_has_aux_loss(config)) PARITY_TRY(family_require(&list, PARITY_OP_LOAD_BALANCING_LOSS, 0, NULL));
    }
    *count = list.count;
    return NULL;
}

#define SPEC(initializer, ...) family_spec(&specs, (initializer), __VA_ARGS__)

static parity_error *mlp_specs(family_specs *list, const char *module, int64_t hidden, int64_t intermediate) {
    family_specs specs = *list;
    parity_error *error = SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(intermediate, hidden), "%s.gate_proj.weight", module);
    if (!error) error = SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(intermediate, hidden), "%s.up_proj.weight", module);
    if (!error) error = SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(hidden, intermediate), "%s.down_proj.weight", module);
    *list = specs;
    return error;
}

static parity_error *attention_specs(family_specs *list, const parity_model_config *config, const char *module) {
    family_specs specs = *list;
    const parity_model_traits *traits = config->traits;
    int64_t hidden = config->hidden_size, head_dim = config->head_dim;
    int64_t query = config->num_attention_heads * head_dim * (traits->output_gate ? 2 : 1);
    int64_t key = config->num_key_value_heads * head_dim, output = config->num_attention_heads * head_dim;
    parity_initializer norm = traits->norm == PARITY_RMS_NORM_OFFSET ? PARITY_INIT_ZEROS : PARITY_INIT_ONES;
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(query, hidden), "%s.q_proj.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(key, hidden), "%s.k_proj.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(key, hidden), "%s.v_proj.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(hidden, output), "%s.o_proj.weight", module));
    if (config->attention_bias) {
        PARITY_TRY(SPEC(PARITY_INIT_ZEROS, PARITY_SHAPE(query), "%s.q_proj.bias", module));
        PARITY_TRY(SPEC(PARITY_INIT_ZEROS, PARITY_SHAPE(key), "%s.k_proj.bias", module));
        PARITY_TRY(SPEC(PARITY_INIT_ZEROS, PARITY_SHAPE(key), "%s.v_proj.bias", module));
    }
    if (config->attention_out_bias) PARITY_TRY(SPEC(PARITY_INIT_ZEROS, PARITY_SHAPE(hidden), "%s.o_proj.bias", module));
    if (traits->qk_norm) {
        PARITY_TRY(SPEC(norm, PARITY_SHAPE(head_dim), "%s.q_norm.weight", module));
        PARITY_TRY(SPEC(norm, PARITY_SHAPE(head_dim), "%s.k_norm.weight", module));
    }
    *list = specs;
    return NULL;
}

static parity_error *mla_specs(family_specs *list, const parity_model_config *config, const char *module) {
    family_specs specs = *list;
    int64_t hidden = config->hidden_size, heads = config->num_attention_heads;
    int64_t qk_head_dim = config->qk_nope_head_dim + config->qk_rope_head_dim;
    if (config->q_lora_rank > 0) {
        PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(config->q_lora_rank, hidden), "%s.q_a_proj.weight", module));
        PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(config->q_lora_rank), "%s.q_a_layernorm.weight", module));
        PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(heads * qk_head_dim, config->q_lora_rank), "%s.q_b_proj.weight", module));
    } else {
        PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(heads * qk_head_dim, hidden), "%s.q_proj.weight", module));
    }
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(config->kv_lora_rank + config->qk_rope_head_dim, hidden),
                    "%s.kv_a_proj_with_mqa.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(config->kv_lora_rank), "%s.kv_a_layernorm.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(heads * (config->qk_nope_head_dim + config->v_head_dim), config->kv_lora_rank),
                    "%s.kv_b_proj.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(hidden, heads * config->v_head_dim), "%s.o_proj.weight", module));
    *list = specs;
    return NULL;
}

// A_log ~ log(A) with A ~ U(1, 16): drawn uniform in [0, log 16].
static parity_error *A_log_spec(family_specs *specs, const char *module, int64_t value_heads) {
    PARITY_TRY(family_spec(specs, PARITY_INIT_UNIFORM, PARITY_SHAPE(value_heads), "%s.A_log", module));
    specs->items[specs->count - 1].low = 0.0;
    specs->items[specs->count - 1].high = 2.772588722239781;
    return NULL;
}

// Qwen3-Next's GatedDeltaNet in HF named_parameters order: its own dt_bias and A_log, then conv1d,
// the fused in_proj_qkvz (2 key_dim + 2 value_dim rows, per key head) and in_proj_ba (2 Hv rows), norm, out_proj.
static parity_error *qwen3_next_gated_delta_net_specs(family_specs *list, const parity_model_config *config, const char *module) {
    family_specs specs = *list;
    int64_t hidden = config->hidden_size, value_heads = config->linear_num_value_heads;
    int64_t key_dim = config->linear_num_key_heads * config->linear_key_head_dim, value_dim = value_heads * config->linear_value_head_dim;
    PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(value_heads), "%s.dt_bias", module));
    PARITY_TRY(A_log_spec(&specs, module, value_heads));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(2 * key_dim + value_dim, 1, config->linear_conv_kernel_dim), "%s.conv1d.weight",
                    module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(2 * key_dim + 2 * value_dim, hidden), "%s.in_proj_qkvz.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(2 * value_heads, hidden), "%s.in_proj_ba.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(config->linear_value_head_dim), "%s.norm.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(hidden, value_dim), "%s.out_proj.weight", module));
    *list = specs;
    return NULL;
}

static parity_error *gated_delta_net_specs(family_specs *list, const parity_model_config *config, const char *module) {
    if (config->traits->linear_attention == PARITY_LINEAR_ATTENTION_FUSED) return qwen3_next_gated_delta_net_specs(list, config, module);
    family_specs specs = *list;
    int64_t hidden = config->hidden_size, key_heads = config->linear_num_key_heads, value_heads = config->linear_num_value_heads;
    int64_t key_dim = key_heads * config->linear_key_head_dim, value_dim = value_heads * config->linear_value_head_dim;
    int64_t channels = 2 * key_dim + value_dim;
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(channels, hidden), "%s.in_proj_qkv.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(value_dim, hidden), "%s.in_proj_z.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(value_heads, hidden), "%s.in_proj_b.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(value_heads, hidden), "%s.in_proj_a.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(channels, 1, config->linear_conv_kernel_dim), "%s.conv1d.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(value_heads), "%s.dt_bias", module));
    PARITY_TRY(A_log_spec(&specs, module, value_heads));
    PARITY_TRY(SPEC(PARITY_INIT_ONES, PARITY_SHAPE(config->linear_value_head_dim), "%s.norm.weight", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(hidden, value_dim), "%s.out_proj.weight", module));
    *list = specs;
    return NULL;
}

static parity_error *moe_specs(family_specs *list, const parity_model_config *config, const char *module) {
    family_specs specs = *list;
    int64_t hidden = config->hidden_size, experts = config->num_experts, intermediate = config->moe_intermediate_size;
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(experts, hidden), "%s.gate.weight", module));
    if (config->traits->router == PARITY_MOE_ROUTER_DEEPSEEK_V3)
        PARITY_TRY(SPEC(PARITY_INIT_ZEROS, PARITY_SHAPE(experts), "%s.gate.e_score_correction_bias", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(experts, 2 * intermediate, hidden), "%s.experts.gate_up_proj", module));
    PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(experts, hidden, intermediate), "%s.experts.down_proj", module));
    char shared[160];
    if (config->n_shared_experts > 0) {
        snprintf(shared, sizeof shared, "%s.shared_experts", module);
        PARITY_TRY(mlp_specs(&specs, shared, hidden, intermediate * config->n_shared_experts));
    }
    if (config->shared_expert_intermediate_size > 0) {
        snprintf(shared, sizeof shared, "%s.shared_expert", module);
        PARITY_TRY(mlp_specs(&specs, shared, hidden, config->shared_expert_intermediate_size));
        PARITY_TRY(SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(1, hidden), "%s.shared_expert_gate.weight", module));
    }
    *list = specs;
    return NULL;
}

static parity_error *decoder_parameter_specs(const parity_model_config *config, parity_parameter_spec **out, size_t *count) {
    family_specs specs = {0};
    parity_initializer norm = config->traits->norm == PARITY_RMS_NORM_OFFSET ? PARITY_INIT_ZEROS : PARITY_INIT_ONES;
    int64_t hidden = config->hidden_size;
    parity_error *error = SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(config->vocab_size, hidden), "model.embed_tokens.weight");
    for (int64_t layer = 0; layer < config->num_hidden_layers && !error; layer++) {
        char module[96];
        snprintf(module, sizeof module, "model.layers.%lld", (long long)layer);
        // HF module order: the mixer, the MLP, then the two norms of the layer
        char mixer[128], mlp[128];
        snprintf(mlp, sizeof mlp, "%s.mlp", module);
        if (config->layer_kinds[layer] == PARITY_LAYER_LINEAR_ATTENTION) {
            snprintf(mixer, sizeof mixer, "%s.linear_attn", module);
            error = gated_delta_net_specs(&specs, config, mixer);
        } else {
            snprintf(mixer, sizeof mixer, "%s.self_attn", module);
            error = config->traits->attention == PARITY_ATTENTION_MLA ? mla_specs(&specs, config, mixer)
                                                                      : attention_specs(&specs, config, mixer);
        }
        if (!error)
            error = parity_model_config_is_moe_layer(config, layer) ? moe_specs(&specs, config, mlp)
                                                                    : mlp_specs(&specs, mlp, hidden, config->intermediate_size);
        if (!error) error = SPEC(norm, PARITY_SHAPE(hidden), "%s.input_layernorm.weight", module);
        if (!error) error = SPEC(norm, PARITY_SHAPE(hidden), "%s.post_attention_layernorm.weight", module);
    }
    if (!error) error = SPEC(norm, PARITY_SHAPE(hidden), "model.norm.weight");
    if (!error && !config->tie_word_embeddings) error = SPEC(PARITY_INIT_NORMAL, PARITY_SHAPE(config->vocab_size, hidden), "lm_head.weight");
    if (error) {
        free(specs.items);
        return error;
    }
    *out = specs.items;
    *count = specs.count;
    return NULL;
}

// Every op decoder_requirements can name (the union over configs).
static const char *const decoder_ops[] = {
    PARITY_OP_EMBEDDING, PARITY_OP_LINEAR, PARITY_OP_ADD, PARITY_OP_RMS_NORM, PARITY_OP_CROSS_ENTROPY,
    PARITY_OP_ATTENTION, PARITY_OP_ROTARY,                                   // attention layers
    PARITY_OP_SPLIT, PARITY_OP_SIGMOID_GATE, PARITY_OP_CONCAT, PARITY_OP_BROADCAST_HEADS, // gates, MLA
    PARITY_OP_CAUSAL_CONV1D, PARITY_OP_GATED_DELTA_RULE, PARITY_OP_GDN_GATING, PARITY_OP_RMS_NORM_GATED, // GatedDeltaNet
    PARITY_OP_SWIGLU, PARITY_OP_MOE_ROUTER, PARITY_OP_MOE_EXPERTS, PARITY_OP_LOAD_BALANCING_LOSS,      // MLP, MoE
};

const parity_model_family parity_decoder_family = {
    .name = "causal-LM decoder",
    .requirements = decoder_requirements,
    .ops = decoder_ops,
    .op_count = sizeof decoder_ops / sizeof decoder_ops[0],
    .parameter_specs = decoder_parameter_specs,
    .forward = decoder_forward,
};
