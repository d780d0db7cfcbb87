// descriptor.c: the add op descriptor (ops/op_descriptor.h).
//   slots: a, b -> y (any shape, all alike); no attributes
#include "ops/add/add.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(add, "a", PARITY_SLOT_INPUT, a, da),
    PARITY_OP_SLOT(add, "b", PARITY_SLOT_INPUT, b, db),
    PARITY_OP_SLOT(add, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(add, PARITY_OP_ADD)
