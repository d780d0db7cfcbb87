// descriptor.c: the broadcast_heads op descriptor (ops/op_descriptor.h).
//   slots: x (N, 1, D) -> y (N, H, D); no attributes (H is y's)
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(broadcast_heads, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(broadcast_heads, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(broadcast_heads, PARITY_OP_BROADCAST_HEADS)
