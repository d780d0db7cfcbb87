// node_attention.c: attention and the rotary position embedding of query and key on the tape.
#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_attention(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                    parity_variable *key, parity_variable *value, const parity_tensor *cu_seqlens, double scale,
                                    bool causal, int64_t sliding_window, parity_variable **out) {
    bool needs_gradient = query->requires_gradient || key->requires_gradient || value->requires_gradient;
    PARITY_TRY(parity_tape_new_variable(tape, name, query->value.dtype,
                                        PARITY_SHAPE(query->value.shape[0], query->value.shape[1], value->value.shape[2]),
                                        needs_gradient, out));
    parity_attention_args attributes = {.scale = scale, .causal = causal, .sliding_window = sliding_window};
    return parity_node_op(tape, &parity_attention_op, backend, name, &attributes,
                          (parity_node_operand[]){{query}, {key}, {value}, {.tensor = cu_seqlens}, {*out}});
}

// An output nobody used still gets a gradient for the rotary contract: the node helper passes zeros.
parity_error *parity_node_rotary(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *query,
                                 parity_variable *key, const parity_tensor *positions, const parity_rope_description *rope,
                                 parity_variable **query_out, parity_variable **key_out) {
    PARITY_TRY(parity_node_output_like(tape, name, query, query->requires_gradient, query_out));
    PARITY_TRY(parity_node_output_like(tape, name, key, key->requires_gradient, key_out));
    return parity_node_op(tape, &parity_rotary_op, backend, name, rope,
                          (parity_node_operand[]){{query}, {key}, {.tensor = positions}, {*query_out}, {*key_out}});
}
