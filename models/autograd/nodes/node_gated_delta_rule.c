// node_gated_delta_rule.c: the gated delta rule (GatedDeltaNet's linear attention) on the tape.
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"

typedef struct gated_delta_rule_record {
    const parity_gated_delta_rule_kernels *kernels;
    parity_gated_delta_rule_args args;
    parity_tensor cu_seqlens; // a view of the caller's boundaries (their storage must outlive backward)
    parity_variable *query, *key, *value, *g, *beta, *output;
} gated_delta_rule_record;

static parity_error *gated_delta_rule_backward(parity_tape *tape, parity_node *node) {
    gated_delta_rule_record *record = node->data;
    if (!record->output->has_gradient) return NULL;
    parity_gradient_slot slots[5];
    parity_variable *inputs[5] = {record->query, record->key, record->value, record->g, record->beta};
    parity_error *error = NULL;
    int opened = 0;
    for (; opened < 5 && !error; opened++) error = parity_gradient_slot_open(&slots[opened], inputs[opened]);
    if (!error) {
        parity_gated_delta_rule_grads grads = {&record->output->gradient, slots[0].target, slots[1].target,
                                               slots[2].target, slots[3].target, slots[4].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < opened; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    return error;
}

parity_error *parity_node_gated_delta_rule(parity_tape *tape, const parity_backend *backend, const char *name,
                                           parity_variable *query, parity_variable *key, parity_variable *value,
                                           parity_variable *g, parity_variable *beta, const parity_tensor *cu_seqlens,
                                           double scale, bool use_qk_l2norm, parity_variable **out) {
    bool needs_gradient = query->requires_gradient || key->requires_gradient || value->requires_gradient ||
                          g->requires_gradient || beta->requires_gradient;
    // (N, Hv, Dv) in the call's (query's) dtype
    PARITY_TRY(parity_tape_new_variable(tape, name, query->value.dtype, value->value.ndim, value->value.shape,
                                        needs_gradient, out));
    gated_delta_rule_record *record = calloc(1, sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording gated_delta_rule");
    record->kernels = backend->kernels;
    record->args = (parity_gated_delta_rule_args){&query->value, &key->value, &value->value, &g->value, &beta->value,
                                                  NULL, scale, use_qk_l2norm, &(*out)->value,
                                                  0 /* chunked backends: fla's default chunk of 64 */};
    if (cu_seqlens) {
        record->cu_seqlens = *cu_seqlens;
        record->cu_seqlens.owns_data = false;
        record->cu_seqlens.allocated_bytes = 0;
        record->args.cu_seqlens = &record->cu_seqlens;
    }
    record->query = query;
    record->key = key;
    record->value = value;
    record->g = g;
    record->beta = beta;
    record->output = *out;
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_GATED_DELTA_RULE, backend->name, name, error, &saved, record, gated_delta_rule_backward);
}
