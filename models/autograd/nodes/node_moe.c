// node_moe.c: the MoE ops on the tape: router (logits -> weights + expert indices), experts, and the
// load-balancing aux loss.
#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_moe_router(parity_tape *tape, const parity_backend *backend, const char *name,
                                     const parity_node_router_options *options, parity_variable *logits,
                                     const parity_tensor *correction_bias, parity_dtype weights_dtype,
                                     parity_variable **weights, parity_variable **indices) {
    int64_t tokens = logits->value.shape[0];
    PARITY_TRY(parity_tape_new_variable(tape, name, weights_dtype, PARITY_SHAPE(tokens, options->top_k), logits->requires_gradient,
                                        weights));
    PARITY_TRY(parity_tape_new_variable(tape, name, PARITY_I64, PARITY_SHAPE(tokens, options->top_k), false, indices));
    parity_moe_router_args attributes = {
        .kind = options->kind, .top_k = options->top_k, .norm_topk_prob = options->norm_topk_prob,
        .n_group = options->n_group, .topk_group = options->topk_group,
        .routed_scaling_factor = options->routed_scaling_factor};
    return parity_node_op(tape, &parity_moe_router_op, backend, name, &attributes,
                          (parity_node_operand[]){{logits}, {.tensor = correction_bias}, {*weights}, {*indices}});
}

parity_error *parity_node_moe_experts(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *hidden,
                                      parity_variable *gate_up_proj, parity_variable *down_proj, parity_variable *expert_indices,
                                      parity_variable *routing_weights, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, hidden, true, out));
    return parity_node_op(tape, &parity_moe_experts_op, backend, name, NULL,
                          (parity_node_operand[]){{hidden}, {gate_up_proj}, {down_proj}, {.tensor = &expert_indices->value},
                                                  {routing_weights}, {*out}});
}

parity_error *parity_node_load_balancing_loss(parity_tape *tape, const parity_backend *backend, const char *name,
                                              parity_variable *router_logits, int64_t num_layers, int64_t top_k,
                                              parity_variable **loss) {
    parity_dtype dtype = router_logits->value.dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(parity_tape_new_variable(tape, name, dtype, 0, NULL, router_logits->requires_gradient, loss));
    parity_load_balancing_loss_args attributes = {.num_layers = num_layers, .top_k = top_k};
    return parity_node_op(tape, &parity_load_balancing_loss_op, backend, name, &attributes,
                          (parity_node_operand[]){{router_logits}, {*loss}});
}
