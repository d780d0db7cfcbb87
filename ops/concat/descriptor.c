// descriptor.c: the concat op descriptor (ops/op_descriptor.h).
//   slots: part0 .. part7 (N, D_i), the first `count` of them -> y (N, D_0 + D_1 + ...); attributes:
//          parity_concat_args (count)
#include "ops/concat/concat.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(concat, "part0", PARITY_SLOT_INPUT, parts[0], dparts[0], .optional = true),
    PARITY_OP_SLOT(concat, "part1", PARITY_SLOT_INPUT, parts[1], dparts[1], .optional = true),
    PARITY_OP_SLOT(concat, "part2", PARITY_SLOT_INPUT, parts[2], dparts[2], .optional = true),
    PARITY_OP_SLOT(concat, "part3", PARITY_SLOT_INPUT, parts[3], dparts[3], .optional = true),
    PARITY_OP_SLOT(concat, "part4", PARITY_SLOT_INPUT, parts[4], dparts[4], .optional = true),
    PARITY_OP_SLOT(concat, "part5", PARITY_SLOT_INPUT, parts[5], dparts[5], .optional = true),
    PARITY_OP_SLOT(concat, "part6", PARITY_SLOT_INPUT, parts[6], dparts[6], .optional = true),
    PARITY_OP_SLOT(concat, "part7", PARITY_SLOT_INPUT, parts[7], dparts[7], .optional = true),
    PARITY_OP_SLOT(concat, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(concat, PARITY_OP_CONCAT, PARITY_OP_ARGS_ATTRIBUTES(concat))
