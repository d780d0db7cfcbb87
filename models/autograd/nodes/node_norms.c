// node_norms.c: the normalisations on the tape: RMSNorm, Qwen3.5's gated RMSNorm (norm, then
// * silu(gate)) and the L2 norm over the last dimension.
#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_rms_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                   parity_variable *weight, double eps, parity_rms_norm_variant variant, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, input, input->requires_gradient || weight->requires_gradient, out));
    parity_rms_norm_args attributes = {.eps = eps, .variant = variant};
    return parity_node_op(tape, &parity_rms_norm_op, backend, name, &attributes,
                          (parity_node_operand[]){{input}, {weight}, {*out}});
}

parity_error *parity_node_rms_norm_gated(parity_tape *tape, const parity_backend *backend, const char *name,
                                         parity_variable *input, parity_variable *gate, parity_variable *weight, double eps,
                                         parity_variable **out) {
    bool needs_gradient = input->requires_gradient || gate->requires_gradient || weight->requires_gradient;
    PARITY_TRY(parity_node_output_like(tape, name, input, needs_gradient, out));
    parity_rms_norm_gated_args attributes = {.eps = eps};
    return parity_node_op(tape, &parity_rms_norm_gated_op, backend, name, &attributes,
                          (parity_node_operand[]){{input}, {gate}, {weight}, {*out}});
}

parity_error *parity_node_l2_norm(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *input,
                                  double eps, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, input, input->requires_gradient, out));
    parity_l2_norm_args attributes = {.eps = eps};
    return parity_node_op(tape, &parity_l2_norm_op, backend, name, &attributes, (parity_node_operand[]){{input}, {*out}});
}
