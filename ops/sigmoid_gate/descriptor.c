// descriptor.c: the sigmoid_gate op descriptor (ops/op_descriptor.h).
//   slots: x (N, D), gate (N, D) or (N, 1) -> y (N, D); no attributes
#include "ops/registry.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(sigmoid_gate, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(sigmoid_gate, "gate", PARITY_SLOT_INPUT, gate, dgate),
    PARITY_OP_SLOT(sigmoid_gate, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(sigmoid_gate, PARITY_OP_SIGMOID_GATE)
