// node_gated_delta_net.c: GatedDeltaNet's ops on the tape: the depthwise causal conv1d (+ activation),
// the decay g (compute dtype) and write strength beta (gdn_gating; its backward needs both incoming
// gradients: the node helper passes zeros for an output that received none), and the gated delta
// rule (the linear attention).
#include <stdio.h>

#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"
#include "ops/core/cpu_math.h"

parity_error *parity_node_causal_conv1d(parity_tape *tape, const parity_backend *backend, const char *name,
                                        parity_variable *input, parity_variable *weight, const parity_tensor *cu_seqlens,
                                        parity_causal_conv1d_activation activation, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, input, input->requires_gradient || weight->requires_gradient, out));
    parity_causal_conv1d_args attributes = {.activation = activation};
    return parity_node_op(tape, &parity_causal_conv1d_op, backend, name, &attributes,
                          (parity_node_operand[]){{input}, {weight}, {.tensor = cu_seqlens}, {*out}});
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
    PARITY_TRY(parity_node_output_like(tape, output_name, a, needs_gradient, beta));
    return parity_node_op(tape, &parity_gdn_gating_op, backend, name, NULL,
                          (parity_node_operand[]){{a}, {b}, {A_log}, {dt_bias}, {*g}, {*beta}});
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
    parity_gated_delta_rule_args attributes = {.scale = scale, .use_qk_l2norm = use_qk_l2norm,
                                               .chunk_size = 0 /* chunked backends: fla's default chunk of 64 */};
    return parity_node_op(tape, &parity_gated_delta_rule_op, backend, name, &attributes,
                          (parity_node_operand[]){{query}, {key}, {value}, {g}, {beta}, {.tensor = cu_seqlens}, {*out}});
}
