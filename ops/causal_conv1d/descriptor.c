// descriptor.c: the causal_conv1d op descriptor (ops/op_descriptor.h).
//   slots: x (N, C), weight (C, K), cu_seqlens (S + 1) int64 or NULL (data) -> y (N, C); attributes:
//          parity_causal_conv1d_args (activation)
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(causal_conv1d, "x", PARITY_SLOT_INPUT, input, dinput),
    PARITY_OP_SLOT(causal_conv1d, "weight", PARITY_SLOT_INPUT, weight, dweight),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(causal_conv1d, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens, .optional = true),
    PARITY_OP_SLOT(causal_conv1d, "y", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(causal_conv1d, PARITY_OP_CAUSAL_CONV1D, PARITY_OP_ARGS_ATTRIBUTES(causal_conv1d))
