// attention_block.c: HF's standard decoder attention, one function for llama, qwen2, qwen3,
// seed_oss, qwen3_moe and the gated full-attention layers of qwen3_5 / qwen3_next:
//   q = q_proj(x) (N, Hq, D) [qwen3_5: (N, Hq, 2D) split into q and gate], k, v likewise (Hk heads)
//   q, k = q_norm(q), k_norm(k)                       (qwen3 family; (1 + w) for qwen3_5)
//   q, k = rotary(q, k, positions)                     (partial rotary for qwen3_5)
//   o = attention(q, k, v, cu_seqlens, D^-0.5, causal, sliding window of the layer)
//   o = o * sigmoid(gate)                               (qwen3_5 output gate)
//   out = o_proj(o)
// The variants are the model's traits row (qk_norm, output_gate, norm) and the config's biases.
#include <math.h>
#include <stdio.h>

#include "models/families/blocks.h"
#include "models/parallel/parallel_nodes.h"

parity_error *block_attend(family_context *context, const char *module, parity_variable *query, parity_variable *key,
                           parity_variable *value, double scale, int64_t window, parity_variable **out) {
    const parity_backend *attention;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_ATTENTION, &attention));
    const parity_parallel *parallel = context->model->placements ? context->model->parallel : NULL;
    const parity_batch *batch = context->batch;
    if (!parallel || parallel->layout.sp < 2 || parallel->layout.fault_skip_all_to_all) // test-only: attention on the shard alone
        return parity_node_attention(context->tape, attention, module, query, key, value, &batch->cu_seqlens, scale, true,
                                     window, out);
    const int sp = parallel->layout.sp;
    const int64_t query_heads = query->value.shape[1], key_heads = key->value.shape[1];
    PARITY_CHECK(query_heads % sp == 0, PARITY_ERROR_UNSUPPORTED,
                 "%s: sequence parallel over %d ranks: %lld attention heads do not split evenly", module, sp,
                 (long long)query_heads);
    if (key_heads % sp != 0) { // fewer kv heads than ranks: each kv head repeated sp / Hk times, so rank r's
                               // query heads meet their own kv head (r * Hk / sp), as Ulysses does for GQA/MQA
        PARITY_CHECK(sp % key_heads == 0, PARITY_ERROR_UNSUPPORTED,
                     "%s: sequence parallel over %d ranks: %lld key/value heads neither split evenly nor divide the ranks",
                     module, sp, (long long)key_heads);
        const int64_t tokens = key->value.shape[0], head_dim = key->value.shape[2], value_dim = value->value.shape[2];
        const int64_t repeats = sp / key_heads;
        const parity_backend *broadcast;
        PARITY_TRY(family_backend(context, PARITY_OP_ID_BROADCAST_HEADS, &broadcast));
        // (N, Hk, D) -> (N * Hk, 1, D) -> (N * Hk, sp / Hk, D) -> (N, sp, D): head h * repeats + j is head h
        PARITY_TRY(family_reshape(context, key, PARITY_SHAPE(tokens * key_heads, 1, head_dim), &key));
        PARITY_TRY(parity_node_broadcast_heads(context->tape, broadcast, module, key, repeats, &key));
        PARITY_TRY(family_reshape(context, key, PARITY_SHAPE(tokens, sp, head_dim), &key));
        PARITY_TRY(family_reshape(context, value, PARITY_SHAPE(tokens * key_heads, 1, value_dim), &value));
        PARITY_TRY(parity_node_broadcast_heads(context->tape, broadcast, module, value, repeats, &value));
        PARITY_TRY(family_reshape(context, value, PARITY_SHAPE(tokens, sp, value_dim), &value));
    }
    const int64_t rows = batch->rows, columns = batch->row_length;
    parity_variable *q, *k, *v, *attended;
    PARITY_TRY(parity_node_ulysses(context->tape, module, parallel->sequence, rows, columns, true, query, &q));
    PARITY_TRY(parity_node_ulysses(context->tape, module, parallel->sequence, rows, columns, true, key, &k));
    PARITY_TRY(parity_node_ulysses(context->tape, module, parallel->sequence, rows, columns, true, value, &v));
    PARITY_TRY(parity_node_attention(context->tape, attention, module, q, k, v, &batch->sequence_cu_seqlens, scale, true,
                                     window, &attended));
    return parity_node_ulysses(context->tape, module, parallel->sequence, rows, columns, false, attended, out);
}

void block_rope_description(const parity_model_config *config, parity_rope_description *out) {
    *out = config->rope;
}

parity_error *block_attention(family_context *context, int64_t layer, parity_variable *x, parity_variable **out) {
    const parity_model_config *config = &context->model->config;
    const parity_model_traits *traits = config->traits;
    int64_t tokens = x->value.shape[0], query_heads = config->num_attention_heads, key_heads = config->num_key_value_heads;
    int64_t head_dim = config->head_dim;
    char module[96];
    snprintf(module, sizeof module, "model.layers.%lld.self_attn", (long long)layer);

    parity_variable *query_projection, *key_projection, *value_projection, *query, *key, *value, *gate = NULL;
    PARITY_TRY(family_linear(context, x, config->attention_bias, &query_projection, "%s.q_proj", module));
    PARITY_TRY(family_linear(context, x, config->attention_bias, &key_projection, "%s.k_proj", module));
    PARITY_TRY(family_linear(context, x, config->attention_bias, &value_projection, "%s.v_proj", module));
    if (traits->output_gate) { // (N, Hq * 2D) -> (N, Hq, 2D) -> query (N, Hq, D), gate (N, Hq, D)
        parity_variable *pair, *parts[2];
        PARITY_TRY(family_reshape(context, query_projection, PARITY_SHAPE(tokens, query_heads, 2 * head_dim), &pair));
        const parity_backend *split;
        PARITY_TRY(family_backend(context, PARITY_OP_ID_SPLIT, &split));
        PARITY_TRY(parity_node_split(context->tape, split, module, pair,
                                     (int64_t[]){head_dim, head_dim}, 2, parts));
        query = parts[0];
        gate = parts[1];
    } else {
        PARITY_TRY(family_reshape(context, query_projection, PARITY_SHAPE(tokens, query_heads, head_dim), &query));
    }
    PARITY_TRY(family_reshape(context, key_projection, PARITY_SHAPE(tokens, key_heads, head_dim), &key));
    PARITY_TRY(family_reshape(context, value_projection, PARITY_SHAPE(tokens, key_heads, head_dim), &value));
    if (traits->qk_norm) {
        PARITY_TRY(family_rms_norm(context, query, traits->norm, &query, "%s.q_norm", module));
        PARITY_TRY(family_rms_norm(context, key, traits->norm, &key, "%s.k_norm", module));
    }
    parity_rope_description rope;
    block_rope_description(config, &rope);
    const parity_backend *rotary;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_ROTARY, &rotary));
    PARITY_TRY(parity_node_rotary(context->tape, rotary, module, query, key,
                                  &context->batch->positions, &rope, &query, &key));
    int64_t window = config->layer_kinds[layer] == PARITY_LAYER_SLIDING_ATTENTION ? config->sliding_window : 0;
    parity_variable *attended;
    PARITY_TRY(block_attend(context, module, query, key, value, 1.0 / sqrt((double)head_dim), window, &attended));
    if (gate) {
        const parity_backend *sigmoid_gate;
        PARITY_TRY(family_backend(context, PARITY_OP_ID_SIGMOID_GATE, &sigmoid_gate));
        PARITY_TRY(parity_node_sigmoid_gate(context->tape, sigmoid_gate, module, attended, gate, &attended));
    }
    parity_variable *flat;
    PARITY_TRY(family_reshape(context, attended, PARITY_SHAPE(tokens, query_heads * head_dim), &flat));
    return family_linear(context, flat, config->attention_out_bias, out, "%s.o_proj", module);
}
