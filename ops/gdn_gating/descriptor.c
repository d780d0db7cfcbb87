// descriptor.c: the gdn_gating op descriptor (ops/op_descriptor.h).
//   slots: a, b (N, Hv), A_log, dt_bias (Hv) -> g (N, Hv, compute dtype), beta (N, Hv); no attributes. The
//          backward reads both incoming gradients (zeros for an output that received none).
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(gdn_gating, "a", PARITY_SLOT_INPUT, a, da),
    PARITY_OP_SLOT(gdn_gating, "b", PARITY_SLOT_INPUT, b, db),
    PARITY_OP_SLOT(gdn_gating, "A_log", PARITY_SLOT_INPUT, A_log, dA_log),
    PARITY_OP_SLOT(gdn_gating, "dt_bias", PARITY_SLOT_INPUT, dt_bias, ddt_bias),
    PARITY_OP_SLOT(gdn_gating, "g", PARITY_SLOT_OUTPUT, g, dg),
    PARITY_OP_SLOT(gdn_gating, "beta", PARITY_SLOT_OUTPUT, beta, dbeta),
};

PARITY_OP_DESCRIPTOR(gdn_gating, PARITY_OP_GDN_GATING, .needs_every_output_gradient = true)
