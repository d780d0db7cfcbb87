// decoder.c: the causal-LM decoder every supported model shares, HF ForCausalLM semantics:
//   h = embed_tokens(input_ids)
//   per layer: h = h + mixer(input_layernorm(h)); h = h + mlp(post_attention_layernorm(h))
//     mixer: attention (llama, qwen2, qwen3, seed_oss, qwen3_moe, full layers of qwen3_5/next),
//            MLA (deepseek_v3) or GatedDeltaNet (linear layers of qwen3_5/next)
//     mlp:   SwiGLU MLP, or MoE on the config's MoE layers
//   loss = cross_entropy(norm(h), lm_head (or the tied embedding), shifted labels)
//          + router_aux_loss_coef * load_balancing_loss(router outputs of every MoE layer)
// Which mixer, MLP and norm variant a model has is its traits row (models/model_traits.c, the
// list of model_type values that run through here).
#include <stdio.h>
#include <stdlib.h>

#include "models/families/blocks.h"
#include "models/families/decoder_family.h"
#include "models/parallel/parallel_nodes.h"

// HF computes the aux loss only when output_router_logits is set, for the types that have one
// (traits load_balancing_loss; DeepSeek-V3 has none).
bool decoder_has_aux_loss(const parity_model_config *config) {
    if (config->num_experts == 0 || !config->traits->load_balancing_loss || !config->output_router_logits) return false;
    for (int64_t layer = 0; layer < config->num_hidden_layers; layer++)
        if (parity_model_config_is_moe_layer(config, layer)) return true;
    return false;
}

static parity_error *mixer(family_context *context, int64_t layer, parity_variable *x, parity_variable **out) {
    const parity_model_config *config = &context->model->config;
    if (config->layer_kinds[layer] == PARITY_LAYER_LINEAR_ATTENTION) return block_gated_delta_net(context, layer, x, out);
    if (config->traits->attention == PARITY_ATTENTION_MLA) return block_mla(context, layer, x, out);
    return block_attention(context, layer, x, out);
}

parity_error *decoder_forward(parity_model *model, parity_tape *tape, const parity_batch *batch, parity_forward_outputs *outputs) {
    family_context context = {model, tape, batch};
    const parity_model_config *config = &model->config;
    parity_rms_norm_variant norm = config->traits->norm;
    const parity_backend *add, *embed;
    PARITY_TRY(family_backend(&context, PARITY_OP_ID_ADD, &add));
    PARITY_TRY(family_backend(&context, PARITY_OP_ID_EMBEDDING, &embed));
    parity_variable *embedding, *hidden;
    PARITY_TRY(family_parameter(&context, &embedding, "model.embed_tokens.weight"));
    PARITY_TRY(parity_node_embedding(tape, embed, "model.embed_tokens", &batch->input_ids,
                                     embedding, config->pad_token_id, &hidden));
    parity_variable *router_outputs[PARITY_MAX_LAYERS];
    int router_count = 0;
    for (int64_t layer = 0; layer < config->num_hidden_layers; layer++) {
        char module[64];
        snprintf(module, sizeof module, "model.layers.%lld", (long long)layer);
        parity_variable *normed, *mixed, *mlp_out;
        PARITY_TRY(family_rms_norm(&context, hidden, norm, &normed, "%s.input_layernorm", module));
        PARITY_TRY(mixer(&context, layer, normed, &mixed));
        PARITY_TRY(parity_node_add(tape, add, module, hidden, mixed, &hidden));
        PARITY_TRY(family_rms_norm(&context, hidden, norm, &normed, "%s.post_attention_layernorm", module));
        if (parity_model_config_is_moe_layer(config, layer)) {
            parity_variable *router_output = NULL;
            PARITY_TRY(block_moe(&context, layer, normed, &mlp_out, &router_output));
            if (router_output) router_outputs[router_count++] = router_output;
        } else {
            char mlp[80];
            snprintf(mlp, sizeof mlp, "%s.mlp", module);
            PARITY_TRY(block_mlp(&context, mlp, normed, &mlp_out));
        }
        PARITY_TRY(parity_node_add(tape, add, module, hidden, mlp_out, &hidden));
    }
    PARITY_TRY(family_rms_norm(&context, hidden, norm, &hidden, "model.norm"));
    parity_variable *lm_head = embedding;
    if (!config->tie_word_embeddings) PARITY_TRY(family_parameter(&context, &lm_head, "lm_head.weight"));
    parity_variable *cross_entropy;
    const parity_backend *loss;
    PARITY_TRY(family_backend(&context, PARITY_OP_ID_CROSS_ENTROPY, &loss));
    PARITY_TRY(parity_node_cross_entropy(tape, loss, "loss", hidden, lm_head,
                                         &batch->targets, batch->num_items_in_batch, &cross_entropy,
                                         outputs->want_logits ? &outputs->logits : NULL));
    outputs->loss = cross_entropy;
    outputs->loss_input = hidden;
    if (decoder_has_aux_loss(config) && router_count > 0) {
        parity_variable *stacked, *aux;
        const parity_backend *balance;
        PARITY_TRY(family_backend(&context, PARITY_OP_ID_LOAD_BALANCING_LOSS, &balance));
        PARITY_TRY(parity_node_stack_rows(tape, "router outputs", router_outputs, router_count, &stacked));
        // Under a layout the aux loss is the whole batch's: every rank computes it from every rank's
        // router logits, and adds 1 / ranks of it, so the ranks' summed losses count it once and the
        // gather's backward (a reduce-scatter) gives each rank's logits their whole gradient.
        const parity_parallel *parallel = model->placements ? model->parallel : NULL;
        double coefficient = config->router_aux_loss_coef;
        if (parallel) {
            PARITY_TRY(parity_node_gather_rows(tape, "router outputs (every rank)", parallel->world, stacked, &stacked));
            coefficient /= parallel->ranks;
        }
        PARITY_TRY(parity_node_load_balancing_loss(tape, balance, "aux_loss",
                                                   stacked, router_count, config->num_experts_per_tok, &aux));
        outputs->aux_loss = aux;
        PARITY_TRY(parity_node_weighted_sum(tape, "loss", cross_entropy, 1.0, aux, coefficient, &outputs->loss));
    }
    return NULL;
}
