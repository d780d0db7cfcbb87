// descriptor.c: the attention op descriptor (ops/op_descriptor.h).
//   slots: query (N, Hq, D), key (N, Hk, D), value (N, Hk, Dv), cu_seqlens (S + 1) int64 (data) -> output
//          (N, Hq, Dv); attributes: parity_attention_args (scale, causal, sliding_window)
#include "ops/attention/attention.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(attention, "query", PARITY_SLOT_INPUT, query, dquery),
    PARITY_OP_SLOT(attention, "key", PARITY_SLOT_INPUT, key, dkey),
    PARITY_OP_SLOT(attention, "value", PARITY_SLOT_INPUT, value, dvalue),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(attention, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens),
    PARITY_OP_SLOT(attention, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(attention, PARITY_OP_ATTENTION, PARITY_OP_ARGS_ATTRIBUTES(attention))
