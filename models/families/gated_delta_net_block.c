// gated_delta_net_block.c: the linear-attention mixer of Qwen3.5 (HF Qwen3_5GatedDeltaNet):
//   qkv = silu(causal_conv1d(in_proj_qkv(x)))   per document, (N, 2 * key_dim + value_dim)
//   q, k, v = split(qkv)                         (N, Hk, Dk), (N, Hk, Dk), (N, Hv, Dv)
//   g, beta = gdn_gating(in_proj_a(x), in_proj_b(x), A_log, dt_bias)
//   o = gated_delta_rule(q, k, v, g, beta)       q/k l2-normalized in the kernel, scale Dk^-0.5
//   o = rms_norm_gated(o, z = in_proj_z(x))      per value head, weight (Dv)
//   out = out_proj(o)
#include <math.h>
#include <stdio.h>

#include "models/families/blocks.h"

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

    parity_variable *mixed, *z, *b, *a, *conv_weight, *conv_weight_2d, *convolved, *parts[3];
    PARITY_TRY(family_linear(context, x, false, &mixed, "%s.in_proj_qkv", module));
    PARITY_TRY(family_linear(context, x, false, &z, "%s.in_proj_z", module));
    PARITY_TRY(family_linear(context, x, false, &b, "%s.in_proj_b", module));
    PARITY_TRY(family_linear(context, x, false, &a, "%s.in_proj_a", module));
    PARITY_TRY(family_parameter(context, &conv_weight, "%s.conv1d.weight", module)); // (C, 1, K)
    PARITY_TRY(family_reshape(context, conv_weight, PARITY_SHAPE(channels, kernel), &conv_weight_2d));
    PARITY_TRY(parity_node_causal_conv1d(tape, family_backend(context, PARITY_OP_CAUSAL_CONV1D), module, mixed, conv_weight_2d,
                                         &context->batch->cu_seqlens, PARITY_CAUSAL_CONV1D_SILU, &convolved));
    PARITY_TRY(parity_node_split(tape, family_backend(context, PARITY_OP_SPLIT), module, convolved,
                                 (int64_t[]){key_dim, key_dim, value_dim}, 3, parts));
    parity_variable *query, *key, *value;
    PARITY_TRY(family_reshape(context, parts[0], PARITY_SHAPE(tokens, key_heads, key_head_dim), &query));
    PARITY_TRY(family_reshape(context, parts[1], PARITY_SHAPE(tokens, key_heads, key_head_dim), &key));
    PARITY_TRY(family_reshape(context, parts[2], PARITY_SHAPE(tokens, value_heads, value_head_dim), &value));

    parity_variable *A_log, *dt_bias, *g, *beta;
    PARITY_TRY(family_parameter(context, &A_log, "%s.A_log", module));
    PARITY_TRY(family_parameter(context, &dt_bias, "%s.dt_bias", module));
    PARITY_TRY(parity_node_gdn_gating(tape, family_backend(context, PARITY_OP_GDN_GATING), module, a, b, A_log, dt_bias, &g, &beta));

    parity_variable *core;
    PARITY_TRY(parity_node_gated_delta_rule(tape, family_backend(context, PARITY_OP_GATED_DELTA_RULE), module, query, key, value, g,
                                            beta, &context->batch->cu_seqlens, 1.0 / sqrt((double)key_head_dim), true, &core));
    parity_variable *core_rows, *gate_rows, *norm_weight, *normed, *flat;
    PARITY_TRY(family_reshape(context, core, PARITY_SHAPE(tokens * value_heads, value_head_dim), &core_rows));
    PARITY_TRY(family_reshape(context, z, PARITY_SHAPE(tokens * value_heads, value_head_dim), &gate_rows));
    PARITY_TRY(family_parameter(context, &norm_weight, "%s.norm.weight", module));
    PARITY_TRY(parity_node_rms_norm_gated(tape, family_backend(context, PARITY_OP_RMS_NORM_GATED), module, core_rows, gate_rows,
                                          norm_weight, config->rms_norm_eps, &normed));
    PARITY_TRY(family_reshape(context, normed, PARITY_SHAPE(tokens, value_dim), &flat));
    return family_linear(context, flat, false, out, "%s.out_proj", module);
}
