// model_config.c: config.json -> parity_model_config, with every field checked for type and range.
// The model_type's traits row decides which groups of fields are read: a group the type does not
// read is read from no object, so each of its fields takes its default.
#include "models/checkpoint/model_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- typed field readers: absent -> default (or error when required); wrong type -> error ----

// Bounds of the integer fields: generous multiples of the largest published models (a vocabulary
// of 262144, hidden 25600, 128 heads of 256, 384 experts, 10M positions), so that a value like
// hidden_size 1e12 is named here, with its file and field, instead of surfacing as an allocation
// size later.
enum {
    MAX_VOCABULARY = 1 << 24,
    MAX_WIDTH = 1 << 17,        // hidden, intermediate and low-rank sizes
    MAX_HEADS = 1 << 12,
    MAX_HEAD_DIM = 1 << 12,
    MAX_EXPERTS = 1 << 14,      // experts, experts per token, groups, shared experts
    MAX_POSITIONS = 1 << 30,    // position and window lengths
    MAX_CONV_KERNEL = 1 << 10,
};

static parity_error *read_integer(const cJSON *object, const char *path, const char *field, bool required, int64_t minimum,
                                  int64_t maximum, int64_t fallback, int64_t *out) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, field);
    if (!item || cJSON_IsNull(item)) {
        if (required) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: required field '%s' is missing", path, field);
        *out = fallback;
        return NULL;
    }
    if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble) || fabs(item->valuedouble) > 9e15)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s' must be an integer", path, field);
    if ((int64_t)item->valuedouble < minimum || (int64_t)item->valuedouble > maximum)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s' is %lld, outside %lld..%lld", path, field,
                            (long long)item->valuedouble, (long long)minimum, (long long)maximum);
    *out = (int64_t)item->valuedouble;
    return NULL;
}

static parity_error *read_number(const cJSON *object, const char *path, const char *field, double fallback, double *out) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, field);
    if (!item || cJSON_IsNull(item)) {
        *out = fallback;
        return NULL;
    }
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s' must be a finite number", path, field);
    *out = item->valuedouble;
    return NULL;
}

static parity_error *read_bool(const cJSON *object, const char *path, const char *field, bool fallback, bool *out) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, field);
    if (!item || cJSON_IsNull(item)) {
        *out = fallback;
        return NULL;
    }
    if (!cJSON_IsBool(item)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s' must be true or false", path, field);
    *out = cJSON_IsTrue(item);
    return NULL;
}

static parity_error *read_bias(const cJSON *root, const char *path, parity_bias_rule rule, bool *out) {
    switch (rule) {
    case PARITY_BIAS_NONE: *out = false; return NULL;
    case PARITY_BIAS_ALWAYS: *out = true; return NULL;
    case PARITY_BIAS_ATTENTION_BIAS: return read_bool(root, path, "attention_bias", false, out);
    case PARITY_BIAS_ATTENTION_OUT_BIAS: return read_bool(root, path, "attention_out_bias", false, out);
    case PARITY_BIAS_MLP_BIAS: return read_bool(root, path, "mlp_bias", false, out);
    }
    return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: bias rule %d", path, (int)rule);
}

static parity_error *read_rope(const cJSON *root, const char *path, const parity_model_traits *traits,
                               parity_rope_description *rope) {
    // transformers 5: rope_parameters {rope_type, rope_theta, ...}; older: rope_theta + rope_scaling {type|rope_type, ...}
    const cJSON *parameters = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    const char *where = "rope_parameters";
    if (parameters && !cJSON_IsNull(parameters) && !cJSON_IsObject(parameters))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'rope_parameters' must be an object", path);
    if (scaling && !cJSON_IsNull(scaling) && !cJSON_IsObject(scaling))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'rope_scaling' must be an object or null", path);
    const cJSON *source = cJSON_IsObject(parameters) ? parameters : NULL;
    if (!source && cJSON_IsObject(scaling)) {
        source = scaling;
        where = "rope_scaling";
    }
    PARITY_TRY(read_number(source && cJSON_GetObjectItemCaseSensitive(source, "rope_theta") ? source : root, path, "rope_theta",
                           10000.0, &rope->theta));
    if (rope->theta <= 0) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'rope_theta' must be positive", path);
    rope->type = PARITY_ROPE_DEFAULT;
    if (source) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(source, "rope_type");
        if (!type) type = cJSON_GetObjectItemCaseSensitive(source, "type");
        if (type && !cJSON_IsString(type)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.rope_type' must be a string", path, where);
        const char *name = type ? type->valuestring : "default";
        if (strcmp(name, "default") == 0) rope->type = PARITY_ROPE_DEFAULT;
        else if (strcmp(name, "linear") == 0) rope->type = PARITY_ROPE_LINEAR;
        else if (strcmp(name, "llama3") == 0) rope->type = PARITY_ROPE_LLAMA3;
        else if (strcmp(name, "yarn") == 0) rope->type = PARITY_ROPE_YARN;
        else
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.rope_type' is '%s' (supported: default, linear, llama3, yarn)",
                                path, where, name);
        PARITY_TRY(read_number(source, path, "factor", 1.0, &rope->factor));
        PARITY_TRY(read_number(source, path, "low_freq_factor", 1.0, &rope->low_freq_factor));
        PARITY_TRY(read_number(source, path, "high_freq_factor", 4.0, &rope->high_freq_factor));
        PARITY_TRY(read_integer(source, path, "original_max_position_embeddings", false, 1, MAX_POSITIONS, 0,
                                &rope->original_max_position_embeddings));
        PARITY_TRY(read_number(source, path, "beta_fast", 0.0, &rope->beta_fast));
        PARITY_TRY(read_number(source, path, "beta_slow", 0.0, &rope->beta_slow));
        bool truncate = true;
        PARITY_TRY(read_bool(source, path, "truncate", true, &truncate));
        rope->yarn_no_truncate = !truncate;
        PARITY_TRY(read_number(source, path, "mscale", 0.0, &rope->mscale));
        PARITY_TRY(read_number(source, path, "mscale_all_dim", 0.0, &rope->mscale_all_dim));
        PARITY_TRY(read_number(source, path, "attention_factor", 0.0, &rope->attention_factor));
        if (rope->type != PARITY_ROPE_DEFAULT && rope->factor <= 0)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.factor' must be positive", path, where);
        if (rope->type == PARITY_ROPE_LLAMA3 && rope->original_max_position_embeddings == 0)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: llama3 RoPE needs '%s.original_max_position_embeddings'", path, where);
    }
    // partial_rotary_factor lives at the top level or inside rope_parameters
    const cJSON *partial_source =
        source && cJSON_GetObjectItemCaseSensitive(source, "partial_rotary_factor") ? source : root;
    PARITY_TRY(read_number(partial_source, path, "partial_rotary_factor",
                           traits->partial_rotary_factor ? traits->partial_rotary_factor : 1.0, &rope->partial_rotary_factor));
    if (rope->partial_rotary_factor <= 0 || rope->partial_rotary_factor > 1)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'partial_rotary_factor' must be in (0, 1]", path);
    bool interleave = traits->rope_layout == PARITY_ROTARY_INTERLEAVED;
    PARITY_TRY(read_bool(traits->attention == PARITY_ATTENTION_MLA ? root : NULL, path, "rope_interleave", interleave, &interleave));
    rope->layout = interleave ? PARITY_ROTARY_INTERLEAVED : PARITY_ROTARY_HALF_SPLIT;
    return NULL;
}

// layer_types (or the hybrid default) -> layer_kinds; a kind the row's layer pattern does not have is an error.
static parity_error *read_layer_types(const cJSON *root, const char *path, parity_model_config *config) {
    parity_layer_pattern pattern = config->traits->layers;
    const cJSON *types = pattern == PARITY_LAYERS_ALL_FULL ? NULL : cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    const char *second = pattern == PARITY_LAYERS_SLIDING ? "sliding_attention" : "linear_attention";
    if (types && !cJSON_IsNull(types)) {
        if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != config->num_hidden_layers)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'layer_types' must list %lld layer types", path,
                                (long long)config->num_hidden_layers);
        for (int64_t i = 0; i < config->num_hidden_layers; i++) {
            const cJSON *item = cJSON_GetArrayItem(types, (int)i);
            const char *name = cJSON_IsString(item) ? item->valuestring : "";
            if (strcmp(name, "full_attention") == 0) config->layer_kinds[i] = PARITY_LAYER_FULL_ATTENTION;
            else if (strcmp(name, second) == 0)
                config->layer_kinds[i] = pattern == PARITY_LAYERS_SLIDING ? PARITY_LAYER_SLIDING_ATTENTION : PARITY_LAYER_LINEAR_ATTENTION;
            else
                return PARITY_ERROR(PARITY_ERROR_DATA, "%s: layer_types[%lld] is '%s' (%s layers are full_attention or %s)", path,
                                    (long long)i, name, config->model_type, second);
        }
    } else if (pattern == PARITY_LAYERS_HYBRID) {
        int64_t interval;
        PARITY_TRY(read_integer(root, path, "full_attention_interval", false, 1, PARITY_MAX_LAYERS, 4, &interval));
        for (int64_t i = 0; i < config->num_hidden_layers; i++)
            config->layer_kinds[i] = (i + 1) % interval ? PARITY_LAYER_LINEAR_ATTENTION : PARITY_LAYER_FULL_ATTENTION;
    } else if (pattern == PARITY_LAYERS_SLIDING && config->sliding_window > 0) {
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s: use_sliding_window without layer_types is not implemented (HF's "
                            "max_window_layers rule); list the layers in layer_types", path);
    }
    return NULL;
}

static parity_error *read_mlp_only_layers(const cJSON *root, const char *path, parity_model_config *config) {
    const cJSON *mlp_only = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers");
    if (mlp_only && !cJSON_IsNull(mlp_only)) {
        if (!cJSON_IsArray(mlp_only)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'mlp_only_layers' must be a list", path);
        for (const cJSON *item = mlp_only->child; item; item = item->next) {
            if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble >= (double)config->num_hidden_layers)
                return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'mlp_only_layers' has an entry outside 0..%lld", path,
                                    (long long)config->num_hidden_layers - 1);
            config->mlp_only_layers[(int64_t)item->valuedouble] = true;
        }
    }
    return NULL;
}

parity_error *parity_model_config_parse(const char *json_text, const char *path, parity_model_config *config) {
    memset(config, 0, sizeof *config);
    snprintf(config->path, sizeof config->path, "%s", path);
    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json_text, &parse_end, false);
    if (!root) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not valid JSON (near byte %zu)", path,
                                   parse_end ? (size_t)(parse_end - json_text) : 0);
    parity_error *error = NULL;
#define READ(expression) do { if (!error) error = (expression); } while (0)
    if (!cJSON_IsObject(root)) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a JSON object", path);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!error && !cJSON_IsString(type)) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: required field 'model_type' is missing", path);
    if (!error) {
        snprintf(config->model_type, sizeof config->model_type, "%s", type->valuestring);
        error = parity_model_traits_lookup(config->model_type, path, &config->traits);
    }
    const parity_model_traits *traits = config->traits; // read below only when !error (then set)
    READ(read_integer(root, path, "vocab_size", true, 1, MAX_VOCABULARY, 0, &config->vocab_size));
    READ(read_integer(root, path, "hidden_size", true, 1, MAX_WIDTH, 0, &config->hidden_size));
    READ(read_integer(root, path, "num_hidden_layers", true, 1, PARITY_MAX_LAYERS, 0, &config->num_hidden_layers));
    READ(read_integer(root, path, "num_attention_heads", true, 1, MAX_HEADS, 0, &config->num_attention_heads));
    READ(read_integer(root, path, "num_key_value_heads", false, 1, MAX_HEADS, config->num_attention_heads, &config->num_key_value_heads));
    if (!error && config->num_attention_heads % config->num_key_value_heads != 0)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld", path,
                             (long long)config->num_attention_heads, (long long)config->num_key_value_heads);
    READ(read_integer(root, path, "intermediate_size", !traits->moe, 1, MAX_WIDTH, 0, &config->intermediate_size));
    if (!error && !cJSON_GetObjectItemCaseSensitive(root, "head_dim") && config->hidden_size % config->num_attention_heads != 0)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: no head_dim and hidden_size %lld is not divisible by %lld heads", path,
                             (long long)config->hidden_size, (long long)config->num_attention_heads);
    READ(read_integer(root, path, "head_dim", false, 1, MAX_HEAD_DIM,
                      config->num_attention_heads ? config->hidden_size / config->num_attention_heads : 0, &config->head_dim));
    READ(read_number(root, path, "rms_norm_eps", 1e-6, &config->rms_norm_eps));
    READ(read_bool(root, path, "tie_word_embeddings", traits->tie_word_embeddings, &config->tie_word_embeddings));
    READ(read_bias(root, path, traits->qkv_bias, &config->attention_bias));
    READ(read_bias(root, path, traits->o_bias, &config->attention_out_bias));
    READ(read_bias(root, path, traits->mlp_bias, &config->mlp_bias));
    READ(read_integer(root, path, "max_position_embeddings", false, 1, MAX_POSITIONS, 4096, &config->max_position_embeddings));
    READ(read_integer(root, path, "pad_token_id", false, 0, MAX_VOCABULARY, -1, &config->pad_token_id));
    if (!error && config->pad_token_id >= config->vocab_size)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: pad_token_id %lld is outside the vocabulary", path, (long long)config->pad_token_id);
    // The groups of fields the row's kinds read (model_traits.h); NULL: the group reads as absent.
    const cJSON *sliding_fields = NULL, *moe_fields = NULL, *aux_fields = NULL, *sparse_step_fields = NULL;
    const cJSON *gated_shared_fields = NULL, *plain_shared_fields = NULL, *first_dense_fields = NULL;
    const cJSON *grouped_router_fields = NULL, *mla_fields = NULL, *linear_fields = NULL;
    if (!error) {
        sliding_fields = traits->layers == PARITY_LAYERS_SLIDING ? root : NULL;
        moe_fields = traits->moe ? root : NULL;
        aux_fields = traits->moe && traits->load_balancing_loss ? root : NULL;
        sparse_step_fields = traits->moe && traits->moe_layers == PARITY_MOE_LAYERS_SPARSE_STEP ? root : NULL;
        first_dense_fields = traits->moe && traits->moe_layers == PARITY_MOE_LAYERS_FIRST_K_DENSE ? root : NULL;
        gated_shared_fields = traits->moe && traits->shared_expert == PARITY_SHARED_EXPERT_GATED ? root : NULL;
        plain_shared_fields = traits->moe && traits->shared_expert == PARITY_SHARED_EXPERT_PLAIN ? root : NULL;
        grouped_router_fields = traits->moe && traits->router == PARITY_MOE_ROUTER_DEEPSEEK_V3 ? root : NULL;
        mla_fields = traits->attention == PARITY_ATTENTION_MLA ? root : NULL;
        linear_fields = traits->linear_attention != PARITY_LINEAR_ATTENTION_NONE ? root : NULL;
    }
    bool use_sliding = false;
    READ(read_bool(sliding_fields, path, "use_sliding_window", false, &use_sliding));
    int64_t sliding = 0;
    READ(read_integer(sliding_fields, path, "sliding_window", false, 0, MAX_POSITIONS, 0, &sliding));
    config->sliding_window = use_sliding ? sliding : 0;
    if (!error) error = read_rope(root, path, traits, &config->rope);
    if (!error) error = read_layer_types(root, path, config);

    // MoE
    int64_t experts = 0;
    READ(read_integer(moe_fields, path, "num_experts", false, 0, MAX_EXPERTS, 0, &experts));
    if (!error && experts == 0) error = read_integer(moe_fields, path, "num_local_experts", false, 0, MAX_EXPERTS, 0, &experts);
    if (!error && experts == 0) error = read_integer(moe_fields, path, "n_routed_experts", false, 0, MAX_EXPERTS, 0, &experts);
    config->num_experts = experts;
    READ(read_integer(moe_fields, path, "num_experts_per_tok", experts > 0, 1, MAX_EXPERTS, 0, &config->num_experts_per_tok));
    if (!error && experts > 0 && config->num_experts_per_tok > experts)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: num_experts_per_tok %lld exceeds the %lld experts", path,
                             (long long)config->num_experts_per_tok, (long long)experts);
    READ(read_integer(moe_fields, path, "moe_intermediate_size", experts > 0, 1, MAX_WIDTH, 0, &config->moe_intermediate_size));
    READ(read_bool(moe_fields, path, "norm_topk_prob", traits->norm_topk_prob, &config->norm_topk_prob));
    READ(read_integer(sparse_step_fields, path, "decoder_sparse_step", false, 1, PARITY_MAX_LAYERS, 1, &config->decoder_sparse_step));
    if (!error) error = read_mlp_only_layers(sparse_step_fields, path, config);
    READ(read_number(aux_fields, path, "router_aux_loss_coef", 0.001, &config->router_aux_loss_coef));
    READ(read_bool(aux_fields, path, "output_router_logits", false, &config->output_router_logits));
    READ(read_integer(gated_shared_fields, path, "shared_expert_intermediate_size", false, 0, MAX_WIDTH, 0,
                      &config->shared_expert_intermediate_size));

    // DeepSeek-V3: MLA, grouped routing, plain shared experts, first dense layers
    READ(read_integer(mla_fields, path, "q_lora_rank", false, 0, MAX_WIDTH, 0, &config->q_lora_rank));
    READ(read_integer(mla_fields, path, "kv_lora_rank", false, 0, MAX_WIDTH, 0, &config->kv_lora_rank));
    READ(read_integer(mla_fields, path, "qk_nope_head_dim", false, 0, MAX_HEAD_DIM, 0, &config->qk_nope_head_dim));
    READ(read_integer(mla_fields, path, "qk_rope_head_dim", false, 0, MAX_HEAD_DIM, 0, &config->qk_rope_head_dim));
    READ(read_integer(mla_fields, path, "v_head_dim", false, 0, MAX_HEAD_DIM, 0, &config->v_head_dim));
    READ(read_integer(grouped_router_fields, path, "n_group", false, 1, MAX_EXPERTS, 1, &config->n_group));
    READ(read_integer(grouped_router_fields, path, "topk_group", false, 1, MAX_EXPERTS, 1, &config->topk_group));
    READ(read_integer(plain_shared_fields, path, "n_shared_experts", false, 0, MAX_EXPERTS, 0, &config->n_shared_experts));
    READ(read_integer(first_dense_fields, path, "first_k_dense_replace", false, 0, PARITY_MAX_LAYERS, 0, &config->first_k_dense_replace));
    READ(read_number(grouped_router_fields, path, "routed_scaling_factor", 1.0, &config->routed_scaling_factor));
    if (!error && mla_fields) {
        if (!config->kv_lora_rank || !config->qk_nope_head_dim || !config->qk_rope_head_dim || !config->v_head_dim)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and "
                                 "v_head_dim", path, config->model_type);
        else if (config->attention_bias)
            error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "%s: attention_bias true: the biases of the MLA projections are not "
                                 "implemented", path);
    }
    if (!error && grouped_router_fields && experts > 0 &&
        (experts % config->n_group != 0 || config->topk_group > config->n_group))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: n_routed_experts %lld must split into n_group %lld groups with "
                             "topk_group <= n_group", path, (long long)experts, (long long)config->n_group);

    // Qwen3.5 / Qwen3-Next GatedDeltaNet
    READ(read_integer(linear_fields, path, "linear_num_key_heads", false, 0, MAX_HEADS, 0, &config->linear_num_key_heads));
    READ(read_integer(linear_fields, path, "linear_num_value_heads", false, 0, MAX_HEADS, 0, &config->linear_num_value_heads));
    READ(read_integer(linear_fields, path, "linear_key_head_dim", false, 0, MAX_HEAD_DIM, 0, &config->linear_key_head_dim));
    READ(read_integer(linear_fields, path, "linear_value_head_dim", false, 0, MAX_HEAD_DIM, 0, &config->linear_value_head_dim));
    READ(read_integer(linear_fields, path, "linear_conv_kernel_dim", false, 0, MAX_CONV_KERNEL, 4, &config->linear_conv_kernel_dim));
    if (!error) {
        bool has_linear = false;
        for (int64_t i = 0; i < config->num_hidden_layers; i++) has_linear |= config->layer_kinds[i] == PARITY_LAYER_LINEAR_ATTENTION;
        if (has_linear && (!config->linear_num_key_heads || !config->linear_num_value_heads || !config->linear_key_head_dim ||
                           !config->linear_value_head_dim || config->linear_num_value_heads % config->linear_num_key_heads))
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: linear_attention layers need linear_num_key_heads, linear_num_value_heads "
                                 "(a multiple of the key heads), linear_key_head_dim and linear_value_head_dim", path);
    }
#undef READ
    cJSON_Delete(root);
    return error;
}

parity_error *parity_model_config_read(const char *path, parity_model_config *out) {
    FILE *stream = fopen(path, "rb");
    if (!stream) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t length = 0, capacity = 0;
    for (;;) {
        if (length + 4096 + 1 > capacity) {
            capacity = capacity ? capacity * 2 : 65536;
            char *grown = realloc(text, capacity);
            if (!grown) {
                free(text);
                fclose(stream);
                return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: reading", path);
            }
            text = grown;
        }
        size_t got = fread(text + length, 1, 4096, stream);
        length += got;
        if (got < 4096) break;
    }
    bool failed = ferror(stream);
    fclose(stream);
    if (failed) {
        free(text);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: read error", path);
    }
    text[length] = '\0';
    parity_error *error = parity_model_config_parse(text, path, out);
    free(text);
    return error;
}

bool parity_model_config_is_moe_layer(const parity_model_config *config, int64_t layer) {
    if (config->num_experts == 0 || layer < 0 || layer >= config->num_hidden_layers) return false;
    switch (config->traits->moe_layers) {
    case PARITY_MOE_LAYERS_EVERY: return true;
    case PARITY_MOE_LAYERS_SPARSE_STEP: return !config->mlp_only_layers[layer] && (layer + 1) % config->decoder_sparse_step == 0;
    case PARITY_MOE_LAYERS_FIRST_K_DENSE: return layer >= config->first_k_dense_replace;
    }
    return false;
}
