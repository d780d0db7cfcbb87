// node_gdn_gating.c: GatedDeltaNet's decay g (compute dtype) and write strength beta on the tape.
// The op's backward needs both incoming gradients: an output that received none gets zeros.
#include <stdio.h>
#include <stdlib.h>

#include "models/autograd/gradient_slot.h"
#include "models/autograd/nodes.h"
#include "ops/core/cpu_math.h"

typedef struct gdn_gating_record {
    const parity_gdn_gating_kernels *kernels;
    parity_gdn_gating_args args;
    parity_variable *a, *b, *A_log, *dt_bias, *g, *beta;
} gdn_gating_record;

// The output's gradient, or a zero tensor shaped like it in `zeros` when it received none.
static parity_error *incoming_gradient(parity_variable *output, parity_tensor *zeros, const parity_tensor **gradient) {
    if (output->has_gradient) {
        *gradient = &output->gradient;
        return NULL;
    }
    PARITY_TRY(parity_tensor_zeros(zeros, output->value.dtype, output->value.device, output->value.ndim, output->value.shape));
    *gradient = zeros;
    return NULL;
}

static parity_error *gdn_gating_backward(parity_tape *tape, parity_node *node) {
    gdn_gating_record *record = node->data;
    if (!record->g->has_gradient && !record->beta->has_gradient) return NULL;
    parity_tensor zero_g = {0}, zero_beta = {0};
    const parity_tensor *dg = NULL, *dbeta = NULL;
    parity_error *error = incoming_gradient(record->g, &zero_g, &dg);
    if (!error) error = incoming_gradient(record->beta, &zero_beta, &dbeta);
    parity_gradient_slot slots[4];
    parity_variable *inputs[4] = {record->a, record->b, record->A_log, record->dt_bias};
    int opened = 0;
    for (; opened < 4 && !error; opened++) error = parity_gradient_slot_open(&slots[opened], inputs[opened]);
    if (!error) {
        parity_gdn_gating_grads grads = {dg, dbeta, slots[0].target, slots[1].target, slots[2].target, slots[3].target};
        error = record->kernels->backward(tape->exec, &record->args, &node->saved, &grads);
    }
    for (int i = 0; i < opened; i++) {
        if (!error) error = parity_gradient_slot_close(&slots[i]);
        parity_gradient_slot_abandon(&slots[i]);
    }
    parity_tensor_release(&zero_g);
    parity_tensor_release(&zero_beta);
    return error;
}

parity_error *parity_node_gdn_gating(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                                     parity_variable *b, parity_variable *A_log, parity_variable *dt_bias, parity_variable **g,
                                     parity_variable **beta) {
    bool needs_gradient =
        a->requires_gradient || b->requires_gradient || A_log->requires_gradient || dt_bias->requires_gradient;
    char output_name[128];
    // g (N, Hv) in the compute dtype, beta (N, Hv) in the call's dtype
    snprintf(output_name, sizeof output_name, "%s (g)", name);
    PARITY_TRY(parity_tape_new_variable(tape, output_name, parity_compute_dtype(a->value.dtype), a->value.ndim,
                                        a->value.shape, needs_gradient, g));
    snprintf(output_name, sizeof output_name, "%s (beta)", name);
    PARITY_TRY(parity_tape_new_variable(tape, output_name, a->value.dtype, a->value.ndim, a->value.shape, needs_gradient,
                                        beta));
    gdn_gating_record *record = malloc(sizeof *record);
    if (!record) return PARITY_ERROR(PARITY_ERROR_MEMORY, "recording gdn_gating");
    *record = (gdn_gating_record){backend->kernels,
                                  {&a->value, &b->value, &A_log->value, &dt_bias->value, &(*g)->value, &(*beta)->value},
                                  a, b, A_log, dt_bias, *g, *beta};
    parity_saved saved = {0};
    parity_error *error = record->kernels->forward(tape->exec, &record->args, &saved);
    return parity_tape_record(tape, PARITY_OP_GDN_GATING, backend->name, name, error, &saved, record, gdn_gating_backward);
}
