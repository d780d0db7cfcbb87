// node_elementwise.c: the elementwise ops on the tape: the residual add y = a + b (a and b may be
// the same variable), y = x * sigmoid(gate) (gate of x's shape, or one per row) and silu(gate) * up.
#include "models/autograd/node_op.h"
#include "models/autograd/nodes.h"

parity_error *parity_node_add(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *a,
                              parity_variable *b, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, a, a->requires_gradient || b->requires_gradient, out));
    return parity_node_op(tape, &parity_add_op, backend, name, NULL, (parity_node_operand[]){{a}, {b}, {*out}});
}

parity_error *parity_node_sigmoid_gate(parity_tape *tape, const parity_backend *backend, const char *name,
                                       parity_variable *input, parity_variable *gate, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, input, input->requires_gradient || gate->requires_gradient, out));
    return parity_node_op(tape, &parity_sigmoid_gate_op, backend, name, NULL,
                          (parity_node_operand[]){{input}, {gate}, {*out}});
}

parity_error *parity_node_swiglu(parity_tape *tape, const parity_backend *backend, const char *name, parity_variable *gate,
                                 parity_variable *up, parity_variable **out) {
    PARITY_TRY(parity_node_output_like(tape, name, gate, gate->requires_gradient || up->requires_gradient, out));
    return parity_node_op(tape, &parity_swiglu_op, backend, name, NULL, (parity_node_operand[]){{gate}, {up}, {*out}});
}
