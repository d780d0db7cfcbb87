// moe_block.c: the sparse MoE layer.
//   Qwen3-MoE / Qwen3.5-MoE / Qwen3-Next: router_logits = gate(x); softmax top-k (norm_topk_prob);
//     out = experts(x); Qwen3.5-MoE / Next add sigmoid(shared_expert_gate(x)) * shared_expert(x).
//     The raw router logits feed the load-balancing aux loss.
//   DeepSeek-V3: router_logits = gate(x) computed in f32 (f64 in f64 runs); sigmoid scores with the
//     e_score_correction_bias, group-limited top-k, routed_scaling_factor; weights stay f32;
//     out = experts(x) + shared_experts(x). No aux loss.
#include <stdio.h>

#include "models/families/blocks.h"
#include "models/parallel/parallel_nodes.h"

parity_error *block_moe(family_context *context, int64_t layer, parity_variable *x, parity_variable **out,
                        parity_variable **router_output) {
    const parity_model_config *config = &context->model->config;
    parity_tape *tape = context->tape;
    bool deepseek = config->traits->router == PARITY_MOE_ROUTER_DEEPSEEK_V3;
    char module[96];
    snprintf(module, sizeof module, "model.layers.%lld.mlp", (long long)layer);

    parity_variable *router_input = x, *gate_weight, *logits;
    PARITY_TRY(family_parameter(context, &gate_weight, "%s.gate.weight", module));
    parity_dtype router_dtype = deepseek && x->value.dtype != PARITY_F64 ? PARITY_F32 : x->value.dtype;
    if (router_dtype != x->value.dtype) {
        PARITY_TRY(parity_node_cast(tape, module, x, router_dtype, &router_input));
        PARITY_TRY(parity_node_cast(tape, module, gate_weight, router_dtype, &gate_weight));
    }
    const parity_backend *linear, *router, *experts, *add;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_LINEAR, &linear));
    PARITY_TRY(parity_node_linear(tape, linear, module, router_input, gate_weight, NULL, &logits));

    parity_node_router_options options = {
        .kind = config->traits->router,
        .top_k = config->num_experts_per_tok,
        .norm_topk_prob = config->norm_topk_prob,
        .n_group = config->n_group,
        .topk_group = config->topk_group,
        .routed_scaling_factor = config->routed_scaling_factor,
    };
    const parity_tensor *bias = NULL;
    parity_tensor bias_in_router_dtype = {0};
    if (deepseek) {
        parity_parameter *parameter;
        char name[160];
        snprintf(name, sizeof name, "%s.gate.e_score_correction_bias", module);
        PARITY_TRY(parity_parameters_require(&context->model->parameters, name, config->path, &parameter));
        bias = &parameter->value;
        if (parameter->value.dtype != router_dtype) { // kept in f32 as HF does (a buffer, not trained)
            PARITY_TRY(parity_tensor_convert(tape->exec, &bias_in_router_dtype, &parameter->value, router_dtype));
            parity_variable *holder; // the tape owns the converted copy
            PARITY_TRY(parity_tape_adopt(tape, name, &bias_in_router_dtype, false, &holder));
            bias = &holder->value;
        }
    }
    parity_variable *weights, *indices, *routed, *gate_up, *down;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_MOE_ROUTER, &router));
    PARITY_TRY(parity_node_moe_router(tape, router, module, &options, logits, bias,
                                      router_dtype, &weights, &indices));
    PARITY_TRY(family_parameter(context, &gate_up, "%s.experts.gate_up_proj", module));
    PARITY_TRY(family_parameter(context, &down, "%s.experts.down_proj", module));
    PARITY_TRY(family_backend(context, PARITY_OP_ID_MOE_EXPERTS, &experts));
    const parity_parallel *parallel = context->model->placements ? context->model->parallel : NULL;
    if (parallel && parallel->layout.ep > 1) { // expert parallel: the items travel to their experts' rank and back
        parity_variable *received, *local_indices, *received_weights, *expert_outputs;
        const parity_expert_plan *plan;
        PARITY_TRY(parity_node_expert_dispatch(tape, module, parallel->experts, config->num_experts, x, indices, weights,
                                               &received, &local_indices, &received_weights, &plan));
        if (received->value.shape[0] > 0)
            PARITY_TRY(parity_node_moe_experts(tape, experts, module, received, gate_up, down, local_indices,
                                               received_weights, &expert_outputs));
        else // no item for this rank's experts: nothing to compute, nothing to differentiate
            PARITY_TRY(parity_tape_new_variable(tape, module, x->value.dtype, PARITY_SHAPE(0, x->value.shape[1]),
                                                false, &expert_outputs));
        PARITY_TRY(parity_node_expert_combine(tape, module, plan, expert_outputs, &routed));
    } else {
        PARITY_TRY(parity_node_moe_experts(tape, experts, module, x, gate_up, down, indices, weights, &routed));
    }
    *router_output = config->traits->load_balancing_loss ? logits : NULL;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_ADD, &add));
    char shared[128];
    if (config->n_shared_experts > 0) {
        parity_variable *shared_out;
        snprintf(shared, sizeof shared, "%s.shared_experts", module);
        PARITY_TRY(block_mlp(context, shared, x, &shared_out));
        return parity_node_add(tape, add, module, routed, shared_out, out);
    }
    if (config->shared_expert_intermediate_size > 0) {
        parity_variable *shared_out, *shared_gate, *gated;
        snprintf(shared, sizeof shared, "%s.shared_expert", module);
        PARITY_TRY(block_mlp(context, shared, x, &shared_out));
        PARITY_TRY(family_linear(context, x, false, &shared_gate, "%s.shared_expert_gate", module));
        const parity_backend *sigmoid_gate;
        PARITY_TRY(family_backend(context, PARITY_OP_ID_SIGMOID_GATE, &sigmoid_gate));
        PARITY_TRY(parity_node_sigmoid_gate(tape, sigmoid_gate, module, shared_out, shared_gate,
                                            &gated));
        return parity_node_add(tape, add, module, routed, gated, out);
    }
    *out = routed;
    return NULL;
}
