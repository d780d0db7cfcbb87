// descriptor.c: the split op descriptor (ops/op_descriptor.h).
//   slots: x (N, D) -> part0 .. part7 (N, D_i), the first `count` of them (a part with no incoming gradient
//          is passed as NULL: the op reads zeros); attributes: parity_split_args (count)
#include "ops/registry.h"
#include "ops/split/split.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(split, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(split, "part0", PARITY_SLOT_OUTPUT, parts[0], dparts[0], .optional = true),
    PARITY_OP_SLOT(split, "part1", PARITY_SLOT_OUTPUT, parts[1], dparts[1], .optional = true),
    PARITY_OP_SLOT(split, "part2", PARITY_SLOT_OUTPUT, parts[2], dparts[2], .optional = true),
    PARITY_OP_SLOT(split, "part3", PARITY_SLOT_OUTPUT, parts[3], dparts[3], .optional = true),
    PARITY_OP_SLOT(split, "part4", PARITY_SLOT_OUTPUT, parts[4], dparts[4], .optional = true),
    PARITY_OP_SLOT(split, "part5", PARITY_SLOT_OUTPUT, parts[5], dparts[5], .optional = true),
    PARITY_OP_SLOT(split, "part6", PARITY_SLOT_OUTPUT, parts[6], dparts[6], .optional = true),
    PARITY_OP_SLOT(split, "part7", PARITY_SLOT_OUTPUT, parts[7], dparts[7], .optional = true),
};

PARITY_OP_DESCRIPTOR(split, PARITY_OP_SPLIT, PARITY_OP_ARGS_ATTRIBUTES(split))
