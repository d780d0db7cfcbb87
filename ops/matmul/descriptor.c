// descriptor.c: the matmul op descriptor (ops/op_descriptor.h).
//   slots: a (batch, M, K), b (batch, K, N) -> c (batch, M, N); attributes: parity_matmul_args (transpose_a,
//          transpose_b)
#include "ops/matmul/matmul.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(matmul, "a", PARITY_SLOT_INPUT, a, da),
    PARITY_OP_SLOT(matmul, "b", PARITY_SLOT_INPUT, b, db),
    PARITY_OP_SLOT(matmul, "c", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(matmul, PARITY_OP_MATMUL, PARITY_OP_ARGS_ATTRIBUTES(matmul))
