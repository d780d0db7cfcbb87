// model_traits.c: the one list of model types parity implements, one row each (fields in
// model_traits.h). Unset fields are the zero kinds: standard attention, no linear attention, plain
// RMSNorm, no bias, dense, half-split full rotary, untied embeddings.
#include "models/model_traits.h"

#include <stdio.h>
#include <string.h>

#include "models/families/decoder_family.h"
#include "models/model.h"

static const parity_model_traits rows[] = {
    {.model_type = "llama", .family = &parity_decoder_family,
     .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS, .mlp_bias = PARITY_BIAS_MLP_BIAS},
    {.model_type = "qwen2", .family = &parity_decoder_family, .layers = PARITY_LAYERS_SLIDING,
     .qkv_bias = PARITY_BIAS_ALWAYS},
    {.model_type = "qwen3", .family = &parity_decoder_family, .layers = PARITY_LAYERS_SLIDING, .qk_norm = true,
     .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS},
    {.model_type = "seed_oss", .family = &parity_decoder_family,
     .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_OUT_BIAS, .mlp_bias = PARITY_BIAS_MLP_BIAS},
    {.model_type = "qwen3_moe", .family = &parity_decoder_family, .layers = PARITY_LAYERS_SLIDING, .qk_norm = true,
     .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS,
     .moe = true, .router = PARITY_MOE_ROUTER_SOFTMAX_TOP_K, .moe_layers = PARITY_MOE_LAYERS_SPARSE_STEP,
     .load_balancing_loss = true, .norm_topk_prob = false},
    {.model_type = "deepseek_v3", .family = &parity_decoder_family, .attention = PARITY_ATTENTION_MLA,
     .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS,
     .moe = true, .router = PARITY_MOE_ROUTER_DEEPSEEK_V3, .moe_layers = PARITY_MOE_LAYERS_FIRST_K_DENSE,
     .shared_expert = PARITY_SHARED_EXPERT_PLAIN, .norm_topk_prob = true, .rope_layout = PARITY_ROTARY_INTERLEAVED},
    {.model_type = "qwen3_5_text", .family = &parity_decoder_family, .layers = PARITY_LAYERS_HYBRID,
     .linear_attention = PARITY_LINEAR_ATTENTION_SEPARATE, .norm = PARITY_RMS_NORM_OFFSET, .qk_norm = true,
     .output_gate = true, .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS,
     .partial_rotary_factor = 0.25},
    {.model_type = "qwen3_5_moe_text", .family = &parity_decoder_family, .layers = PARITY_LAYERS_HYBRID,
     .linear_attention = PARITY_LINEAR_ATTENTION_SEPARATE, .norm = PARITY_RMS_NORM_OFFSET, .qk_norm = true,
     .output_gate = true, .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS,
     .moe = true, .router = PARITY_MOE_ROUTER_SOFTMAX_TOP_K, .moe_layers = PARITY_MOE_LAYERS_EVERY,
     .shared_expert = PARITY_SHARED_EXPERT_GATED, .load_balancing_loss = true, .norm_topk_prob = true,
     .partial_rotary_factor = 0.25},
    {.model_type = "qwen3_next", .family = &parity_decoder_family, .layers = PARITY_LAYERS_HYBRID,
     .linear_attention = PARITY_LINEAR_ATTENTION_FUSED, .norm = PARITY_RMS_NORM_OFFSET, .qk_norm = true,
     .output_gate = true, .qkv_bias = PARITY_BIAS_ATTENTION_BIAS, .o_bias = PARITY_BIAS_ATTENTION_BIAS,
     .moe = true, .router = PARITY_MOE_ROUTER_SOFTMAX_TOP_K, .moe_layers = PARITY_MOE_LAYERS_SPARSE_STEP,
     .shared_expert = PARITY_SHARED_EXPERT_GATED, .load_balancing_loss = true, .norm_topk_prob = true,
     .partial_rotary_factor = 0.25},
};

const parity_model_traits *parity_model_traits_find(const char *model_type) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].model_type, model_type) == 0) return &rows[i];
    return NULL;
}

void parity_model_traits_all_ops(parity_op_set *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (size_t j = 0; j < rows[i].family->op_count; j++) {
            parity_op_id op;
            if (parity_op_id_find(rows[i].family->ops[j], &op)) out->contains[op] = true;
        }
}

parity_error *parity_model_traits_lookup(const char *model_type, const char *path, const parity_model_traits **out) {
    *out = parity_model_traits_find(model_type);
    if (*out) return NULL;
    char known[512];
    size_t used = 0;
    known[0] = '\0';
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        used += (size_t)snprintf(known + used, used < sizeof known ? sizeof known - used : 0, "%s%s", i ? ", " : "",
                                 rows[i].model_type);
    return PARITY_ERROR(PARITY_ERROR_DATA, "%s: model_type '%s' is not supported (field 'model_type'; supported: %s)", path,
                        model_type, known);
}
