// descriptor.c: the linear op descriptor (ops/op_descriptor.h).
//   slots: x (N, in), weight (out, in), bias (out) or NULL -> y (N, out); no attributes
#include "ops/linear/linear.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(linear, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(linear, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT(linear, "bias", PARITY_SLOT_INPUT, bias, dbias, .optional = true),
    PARITY_OP_SLOT(linear, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(linear, PARITY_OP_LINEAR)
