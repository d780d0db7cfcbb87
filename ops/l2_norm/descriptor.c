// descriptor.c: the l2_norm op descriptor (ops/op_descriptor.h).
//   slots: x (N, D) -> y (N, D); attributes: parity_l2_norm_args (eps)
#include "ops/l2_norm/l2_norm.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(l2_norm, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(l2_norm, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(l2_norm, PARITY_OP_L2_NORM, PARITY_OP_ARGS_ATTRIBUTES(l2_norm))
