// gated_delta_net_block.c: the linear-attention mixer of Qwen3.5 (HF Qwen3_5GatedDeltaNet) and
// Qwen3-Next (HF Qwen3NextGatedDeltaNet):
//   qkv = silu(causal_conv1d(mixed))             per document, (N, 2 * key_dim + value_dim)
//   q, k, v = split(qkv)                         (N, Hk, Dk), (N, Hk, Dk), (N, Hv, Dv)
//   g, beta = gdn_gating(a, b, A_log, dt_bias)
//   o = gated_delta_rule(q, k, v, g, beta)       q/k l2-normalized in the kernel, scale Dk^-0.5
//   o = rms_norm_gated(o, z)                     per value head, weight (Dv)
//   out = out_proj(o)
// The two differ only in the projections that make mixed, z, a and b:
//   qwen3_5:    mixed = in_proj_qkv(x), z = in_proj_z(x), b = in_proj_b(x), a = in_proj_a(x)
//   qwen3_next: in_proj_qkvz(x) (N, 2 * key_dim + 2 * value_dim) and in_proj_ba(x) (N, 2 * Hv) are laid
//               out per key head (fix_query_key_value_ordering): viewed as (N, Hk, 2 Dk + 2 r Dv) and
//               (N, Hk, 2 r) with r = Hv / Hk, split into q, k, v, z and b, a; mixed = cat(q, k, v).
#include <math.h>
#include <stdio.h>

#include "models/families/blocks.h"

typedef struct gdn_projections {
    parity_variable *mixed; // (N, 2 * key_dim + value_dim): q, k, v before the convolution
    parity_variable *z;     // (N, value_dim)
    parity_variable *b, *a; // (N, Hv)
} gdn_projections;

static parity_error *project_qwen3_5(family_context *context, const char *module, parity_variable *x, gdn_projections *out) {
    PARITY_TRY(family_linear(context, x, false, &out->mixed, "%s.in_proj_qkv", module));
    PARITY_TRY(family_linear(context, x, false, &out->z, "%s.in_proj_z", module));
    PARITY_TRY(family_linear(context, x, false, &out->b, "%s.in_proj_b", module));
    return family_linear(context, x, false, &out->a, "%s.in_proj_a", module);
}

static parity_error *project_qwen3_next(family_context *context, const char *module, parity_variable *x, gdn_projections *out) {
    const parity_model_config *config = &context->model->config;
    parity_tape *tape = context->tape;
    const parity_backend *split, *concat;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_SPLIT, &split));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_CONCAT, &concat));
    int64_t tokens = x->value.shape[0], key_heads = config->linear_num_key_heads, value_heads = config->linear_num_value_heads;
    int64_t key_head_dim = config->linear_key_head_dim, value_head_dim = config->linear_value_head_dim;
    int64_t ratio = value_heads / key_heads, group_value = ratio * value_head_dim;
    parity_variable *qkvz, *ba, *per_head, *parts[4], *ba_parts[2], *flat[3];
    PARITY_TRY(family_linear(context, x, false, &qkvz, "%s.in_proj_qkvz", module));
    PARITY_TRY(family_linear(context, x, false, &ba, "%s.in_proj_ba", module));
    // (N, Hk, 2 Dk + 2 r Dv) -> q (N, Hk, Dk), k (N, Hk, Dk), v (N, Hk, r Dv), z (N, Hk, r Dv)
    PARITY_TRY(family_reshape(context, qkvz, PARITY_SHAPE(tokens, key_heads, 2 * key_head_dim + 2 * group_value), &per_head));
    PARITY_TRY(parity_node_split(tape, split, module, per_head, (int64_t[]){key_head_dim, key_head_dim, group_value, group_value}, 4,
                                 parts));
    PARITY_TRY(family_reshape(context, parts[0], PARITY_SHAPE(tokens, key_heads * key_head_dim), &flat[0]));
    PARITY_TRY(family_reshape(context, parts[1], PARITY_SHAPE(tokens, key_heads * key_head_dim), &flat[1]));
    PARITY_TRY(family_reshape(context, parts[2], PARITY_SHAPE(tokens, value_heads * value_head_dim), &flat[2]));
    PARITY_TRY(parity_node_concat(tape, concat, module, flat, 3, &out->mixed));
    PARITY_TRY(family_reshape(context, parts[3], PARITY_SHAPE(tokens, value_heads * value_head_dim), &out->z));
    // (N, Hk, 2 r) -> b (N, Hk, r), a (N, Hk, r) -> (N, Hv)
    PARITY_TRY(family_reshape(context, ba, PARITY_SHAPE(tokens, key_heads, 2 * ratio), &per_head));
    PARITY_TRY(parity_node_split(tape, split, module, per_head, (int64_t[]){ratio, ratio}, 2, ba_parts));
    PARITY_TRY(family_reshape(context, ba_parts[0], PARITY_SHAPE(tokens, value_heads), &out->b));
    return family_reshape(context, ba_parts[1], PARITY_SHAPE(tokens, value_heads), &out->a);
}

parity_error *block_gated_delta_net(family_context *context, int64_t layer, parity_variable *x, parity_variable **out) {
    const parity_model_config *config = &context->model->config;
    parity_tape *tape = context->tape;
    int64_t tokens = x->value.shape[0];
    int64_t key_heads = config->linear_num_key_heads, value_heads = config->linear_num_value_heads;
    int64_t key_head_dim = config->linear_key_head_dim, value_head_dim = config->linear_value_head_dim;
    int64_t key_dim = key_heads * key_head_dim, value_dim = value_heads * value_head_dim;
    int64_t channels = 2 * key_dim + value_dim, kernel = config->linear_conv_kernel_dim;
    char module[96];
    snprintf(module, sizeof module, "model.layers.%lld.linear_attn", (long long)layer);

    const parity_backend *conv1d, *split, *gating, *delta_rule, *norm_gated;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_CAUSAL_CONV1D, &conv1d));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_SPLIT, &split));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_GDN_GATING, &gating));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_GATED_DELTA_RULE, &delta_rule));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_RMS_NORM_GATED, &norm_gated));
    gdn_projections projections;
    if (config->traits->linear_attention == PARITY_LINEAR_ATTENTION_FUSED)
        PARITY_TRY(project_qwen3_next(context, module, x, &projections));
    else
        PARITY_TRY(project_qwen3_5(context, module, x, &projections));
    parity_variable *mixed = projections.mixed, *z = projections.z, *b = projections.b, *a = projections.a;
    parity_variable *conv_weight, *conv_weight_2d, *convolved, *parts[3];
    PARITY_TRY(family_parameter(context, &conv_weight, "%s.conv1d.weight", module)); // (C, 1, K)
    PARITY_TRY(family_reshape(context, conv_weight, PARITY_SHAPE(channels, kernel), &conv_weight_2d));
    PARITY_TRY(parity_node_causal_conv1d(tape, conv1d, module, mixed, conv_weight_2d,
                                         &context->batch->cu_seqlens, PARITY_CAUSAL_CONV1D_SILU, &convolved));
    PARITY_TRY(parity_node_split(tape, split, module, convolved,
                                 (int64_t[]){key_dim, key_dim, value_dim}, 3, parts));
    parity_variable *query, *key, *value;
    PARITY_TRY(family_reshape(context, parts[0], PARITY_SHAPE(tokens, key_heads, key_head_dim), &query));
    PARITY_TRY(family_reshape(context, parts[1], PARITY_SHAPE(tokens, key_heads, key_head_dim), &key));
    PARITY_TRY(family_reshape(context, parts[2], PARITY_SHAPE(tokens, value_heads, value_head_dim), &value));

    parity_variable *A_log, *dt_bias, *g, *beta;
    PARITY_TRY(family_parameter(context, &A_log, "%s.A_log", module));
    PARITY_TRY(family_parameter(context, &dt_bias, "%s.dt_bias", module));
    PARITY_TRY(parity_node_gdn_gating(tape, gating, module, a, b, A_log, dt_bias, &g, &beta));

    parity_variable *core;
    PARITY_TRY(parity_node_gated_delta_rule(tape, delta_rule, module, query, key, value, g,
                                            beta, &context->batch->cu_seqlens, 1.0 / sqrt((double)key_head_dim), true, &core));
    parity_variable *core_rows, *gate_rows, *norm_weight, *normed, *flat;
    PARITY_TRY(family_reshape(context, core, PARITY_SHAPE(tokens * value_heads, value_head_dim), &core_rows));
    PARITY_TRY(family_reshape(context, z, PARITY_SHAPE(tokens * value_heads, value_head_dim), &gate_rows));
    PARITY_TRY(family_parameter(context, &norm_weight, "%s.norm.weight", module));
    PARITY_TRY(parity_node_rms_norm_gated(tape, norm_gated, module, core_rows, gate_rows,
                                          norm_weight, config->rms_norm_eps, &normed));
    PARITY_TRY(family_reshape(context, normed, PARITY_SHAPE(tokens, value_dim), &flat));
    return family_linear(context, flat, false, out, "%s.out_proj", module);
}
