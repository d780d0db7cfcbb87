// descriptor.c: the gated_delta_rule op descriptor (ops/op_descriptor.h).
//   slots: query, key (N, Hk, Dk), value (N, Hv, Dv), g, beta (N, Hv), cu_seqlens (S + 1) int64 or NULL
//          (data) -> output (N, Hv, Dv); attributes: parity_gated_delta_rule_args (scale, use_qk_l2norm,
//          chunk_size)
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(gated_delta_rule, "query", PARITY_SLOT_INPUT, query, dquery),
    PARITY_OP_SLOT(gated_delta_rule, "key", PARITY_SLOT_INPUT, key, dkey),
    PARITY_OP_SLOT(gated_delta_rule, "value", PARITY_SLOT_INPUT, value, dvalue),
    PARITY_OP_SLOT(gated_delta_rule, "g", PARITY_SLOT_INPUT, g, dg),
    PARITY_OP_SLOT(gated_delta_rule, "beta", PARITY_SLOT_INPUT, beta, dbeta),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(gated_delta_rule, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens, .optional = true),
    PARITY_OP_SLOT(gated_delta_rule, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

PARITY_OP_DESCRIPTOR(gated_delta_rule, PARITY_OP_GATED_DELTA_RULE, PARITY_OP_ARGS_ATTRIBUTES(gated_delta_rule))
