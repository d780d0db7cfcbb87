// mla_block.c: DeepSeek-V3 multi-head latent attention (HF DeepseekV3Attention):
//   q = q_proj(x) or q_b_proj(q_a_layernorm(q_a_proj(x)))          (N, Hq, nope + rope)
//   q_nope, q_rot = split(q)
//   kv_latent, k_rot = split(kv_a_proj_with_mqa(x))                 (N, kv_lora_rank), (N, rope)
//   k_nope, v = split(kv_b_proj(kv_a_layernorm(kv_latent)))         (N, Hq, nope), (N, Hq, v_head_dim)
//   q_rot, k_rot = rotary(q_rot, k_rot (one shared head))           interleaved when rope_interleave
//   query = q_nope ++ q_rot; key = k_nope ++ broadcast(k_rot)
//   out = o_proj(attention(query, key, v, scale))                   scale = qk_head_dim^-0.5 (x mscale^2 for yarn)
#include <math.h>
#include <stdio.h>

#include "models/families/blocks.h"

static double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * log(factor) + 1.0; }

parity_error *block_mla(family_context *context, int64_t layer, parity_variable *x, parity_variable **out) {
    const parity_model_config *config = &context->model->config;
    parity_tape *tape = context->tape;
    const parity_backend *split, *concat, *rotary, *broadcast;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_SPLIT, &split));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_CONCAT, &concat));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_ROTARY, &rotary));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_BROADCAST_HEADS, &broadcast));
    int64_t tokens = x->value.shape[0], heads = config->num_attention_heads;
    int64_t nope = config->qk_nope_head_dim, rope_dim = config->qk_rope_head_dim, value_dim = config->v_head_dim;
    char module[96];
    snprintf(module, sizeof module, "model.layers.%lld.self_attn", (long long)layer);

    parity_variable *query_flat, *query, *query_parts[2];
    if (config->q_lora_rank > 0) {
        parity_variable *latent;
        PARITY_TRY(family_linear(context, x, false, &latent, "%s.q_a_proj", module));
        PARITY_TRY(family_rms_norm(context, latent, PARITY_RMS_NORM_STANDARD, &latent, "%s.q_a_layernorm", module));
        PARITY_TRY(family_linear(context, latent, false, &query_flat, "%s.q_b_proj", module));
    } else {
        PARITY_TRY(family_linear(context, x, false, &query_flat, "%s.q_proj", module));
    }
    PARITY_TRY(family_reshape(context, query_flat, PARITY_SHAPE(tokens, heads, nope + rope_dim), &query));
    PARITY_TRY(parity_node_split(tape, split, module, query, (int64_t[]){nope, rope_dim}, 2, query_parts));

    parity_variable *compressed, *kv_parts[2], *kv_latent, *kv_flat, *kv, *key_value_parts[2];
    PARITY_TRY(family_linear(context, x, false, &compressed, "%s.kv_a_proj_with_mqa", module));
    PARITY_TRY(parity_node_split(tape, split, module, compressed, (int64_t[]){config->kv_lora_rank, rope_dim}, 2, kv_parts));
    PARITY_TRY(family_rms_norm(context, kv_parts[0], PARITY_RMS_NORM_STANDARD, &kv_latent, "%s.kv_a_layernorm", module));
    PARITY_TRY(family_linear(context, kv_latent, false, &kv_flat, "%s.kv_b_proj", module));
    PARITY_TRY(family_reshape(context, kv_flat, PARITY_SHAPE(tokens, heads, nope + value_dim), &kv));
    PARITY_TRY(parity_node_split(tape, split, module, kv, (int64_t[]){nope, value_dim}, 2, key_value_parts));

    parity_variable *key_rot_single, *query_rot, *key_rot, *key_rot_heads;
    PARITY_TRY(family_reshape(context, kv_parts[1], PARITY_SHAPE(tokens, 1, rope_dim), &key_rot_single));
    parity_rope_description rope;
    block_rope_description(config, &rope);
    PARITY_TRY(parity_node_rotary(tape, rotary, module, query_parts[1], key_rot_single,
                                  &context->batch->positions, &rope, &query_rot, &key_rot));
    PARITY_TRY(parity_node_broadcast_heads(tape, broadcast, module, key_rot, heads,
                                           &key_rot_heads));
    parity_variable *query_states, *key_states;
    PARITY_TRY(parity_node_concat(tape, concat, module, (parity_variable *[]){query_parts[0], query_rot}, 2, &query_states));
    PARITY_TRY(parity_node_concat(tape, concat, module, (parity_variable *[]){key_value_parts[0], key_rot_heads}, 2, &key_states));

    double scale = 1.0 / sqrt((double)(nope + rope_dim));
    if (config->rope.type == PARITY_ROPE_YARN && config->rope.mscale_all_dim != 0) {
        double mscale = yarn_mscale(config->rope.factor, config->rope.mscale_all_dim);
        scale *= mscale * mscale;
    }
    parity_variable *attended, *flat;
    PARITY_TRY(block_attend(context, module, query_states, key_states, key_value_parts[1], scale, 0, &attended));
    PARITY_TRY(family_reshape(context, attended, PARITY_SHAPE(tokens, heads * value_dim), &flat));
    return family_linear(context, flat, false, out, "%s.o_proj", module);
}
