// node_moe.c: the MoE ops on the tape: router (logits -> weights + expert indices), experts, and the
// load-balancing aux loss.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

// ---- router ----
typedef struct router_record {
    const parity_moe_router_kernels *kernels;
    parity_moe_router_args args;
    parity_variable *logits, *weights;
} router_record;

static parity_error *router_backward(parity_tape *tape, parity_node *node) {
    router_record *record = node->data;
    if (!record->weights->has_gradient) return NULL;
    parity_gradient_slot logits;
    PARITY_TRY(parity_gradient_slot_open(&logits, record->logits));
    parity_moe_router_grads grads = {&record->weights->gradient, logits.target};
    parity_error *error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    if (!error) error = parity_gradient_slot_close(&logits);
    parity_gradient_slot_abandon(&logits);
    return error;
}

parity_error *parity_node_moe_router(parity_tape *tape, const parity_backend *backend, const char *name,
                                     const parity_node_router_options *options, parity_variable *logits,
                                     const parity_tensor *correction_bias, parity_dtype weights_dtype,
                                     parity_variable **weights, parity_variable **indices) {
    int64_t tokens = logits->value.shape[0];
    PARITY_TRY(parity_tape_new_variable(tape, name, weights_dtype, PARITY_SHAPE(tokens, options->top_k), logits->requires_gradient,
                                        weights));
    PARITY_TRY(parity_tape_new_variable(tape, name, PARITY_I64, PARITY_SHAPE(tokens, options->top_k), false, indices));
    router_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording moe_router");
    record->kernels = backend->kernels;
    record->args = (parity_moe_router_args){
        .router_logits = &logits->value, .correction_bias = correction_bias, .kind = options->kind, .top_k = options->top_k,
        .norm_topk_prob = options->norm_topk_prob, .n_group = options->n_group, .topk_group = options->topk_group,
        .routed_scaling_factor = options->routed_scaling_factor, .routing_weights = &(*weights)->value,
        .expert_indices = &(*indices)->value};
    record->logits = logits;
    record->weights = *weights;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_MOE_ROUTER, backend->name, name, error, &saved, record, router_backward);
}

// ---- experts ----
typedef struct experts_record {
    const parity_moe_experts_kernels *kernels;
    parity_moe_experts_args args;
    parity_variable *hidden, *gate_up, *down, *weights, *output;
} experts_record;

static parity_error *experts_backward(parity_tape *tape, parity_node *node) {
    experts_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot slots[4] = {{0}};
    parity_variable *inputs[4] = {record->hidden, record->gate_up, record->down, record->weights};
    parity_error *error = NULL;
    for (int i = 0; i < 4 && !error; i++) error = parity_gradient_slot_open(&slots[i], inputs[i]);
    if (!error) {
        parity_moe_experts_grads grads = {&record->output->gradient, slots[0].target, slots[1].target, slots[2].target,
                                          slots[3].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < 4; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_moe_experts(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *hidden,
                                      parity_variable *gate_up_proj, parity_variable *down_proj, parity_variable *expert_indices,
                                      parity_variable *routing_weights, parity_variable **out) {
    PARITY_TRY(parity_tape_new_variable(tape, name, hidden->value.dtype, hidden->value.ndim, hidden->value.shape, true, out));
    experts_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording moe_experts");
    *record = (experts_record){backend->kernels,
                               {&hidden->value, &gate_up_proj->value, &down_proj->value, &expert_indices->value,
                                &routing_weights->value, &(*out)->value},
                               hidden, gate_up_proj, down_proj, routing_weights, *out};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_MOE_EXPERTS, backend->name, name, error, &saved, record, experts_backward);
}

// ---- load-balancing loss ----
typedef struct balance_record {
    const parity_load_balancing_loss_kernels *kernels;
    parity_load_balancing_loss_args args;
    parity_variable *logits, *loss;
} balance_record;

static parity_error *balance_backward(parity_tape *tape, parity_node *node) {
    balance_record *record = node->data;
    if (!record->loss->has_gradient) return NULL;
    parity_gradient_slot logits;
    PARITY_TRY(parity_gradient_slot_open(&logits, record->logits));
    parity_load_balancing_loss_grads grads = {&record->loss->gradient, logits.target};
    parity_error *error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    if (!error) error = parity_gradient_slot_close(&logits);
    parity_gradient_slot_abandon(&logits);
    return error;
}

parity_error *parity_node_load_balancing_loss(parity_tape *tape, const parity_backend *backend, const char *name,
                                              parity_variable *router_logits, int64_t num_layers, int64_t top_k,
                                              parity_variable **loss) {
    parity_dtype dtype = router_logits->value.dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(parity_tape_new_variable(tape, name, dtype, 0, NULL, router_logits->requires_gradient, loss));
    balance_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording load_balancing_loss");
    *record = (balance_record){backend->kernels, {&router_logits->value, num_layers, top_k, &(*loss)->value}, router_logits, *loss};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_LOAD_BALANCING_LOSS, backend->name, name, error, &saved, record, balance_backward);
}
