// op_id.c: the one id <-> name table of the ops (op_id.h). Each name is the op's PARITY_OP_* string.
#include "ops/op_id.h"

#include <string.h>

#include "ops/add/add.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/concat/concat.h"
#include "ops/embedding/embedding.h"
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/l2_norm/l2_norm.h"
#include "ops/linear/linear.h"
#include "ops/matmul/matmul.h"
#include "ops/moe_router/moe_router.h"
#include "ops/registry.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"

static const char *const op_names[PARITY_OP_ID_COUNT] = {
    [PARITY_OP_ID_ADD] = PARITY_OP_ADD,
    [PARITY_OP_ID_ATTENTION] = PARITY_OP_ATTENTION,
    [PARITY_OP_ID_BROADCAST_HEADS] = PARITY_OP_BROADCAST_HEADS,
    [PARITY_OP_ID_CAUSAL_CONV1D] = PARITY_OP_CAUSAL_CONV1D,
    [PARITY_OP_ID_CONCAT] = PARITY_OP_CONCAT,
    [PARITY_OP_ID_CROSS_ENTROPY] = PARITY_OP_CROSS_ENTROPY,
    [PARITY_OP_ID_DSA_ATTENTION] = PARITY_OP_DSA_ATTENTION,
    [PARITY_OP_ID_DSA_INDEXER] = PARITY_OP_DSA_INDEXER,
    [PARITY_OP_ID_EMBEDDING] = PARITY_OP_EMBEDDING,
    [PARITY_OP_ID_GATED_DELTA_RULE] = PARITY_OP_GATED_DELTA_RULE,
    [PARITY_OP_ID_GDN_GATING] = PARITY_OP_GDN_GATING,
    [PARITY_OP_ID_L2_NORM] = PARITY_OP_L2_NORM,
    [PARITY_OP_ID_LINEAR] = PARITY_OP_LINEAR,
    [PARITY_OP_ID_LOAD_BALANCING_LOSS] = PARITY_OP_LOAD_BALANCING_LOSS,
    [PARITY_OP_ID_MATMUL] = PARITY_OP_MATMUL,
    [PARITY_OP_ID_MHC] = PARITY_OP_MHC,
    [PARITY_OP_ID_MOE_EXPERTS] = PARITY_OP_MOE_EXPERTS,
    [PARITY_OP_ID_MOE_ROUTER] = PARITY_OP_MOE_ROUTER,
    [PARITY_OP_ID_RMS_NORM] = PARITY_OP_RMS_NORM,
    [PARITY_OP_ID_RMS_NORM_GATED] = PARITY_OP_RMS_NORM_GATED,
    [PARITY_OP_ID_ROTARY] = PARITY_OP_ROTARY,
    [PARITY_OP_ID_ROTARY_VISION] = PARITY_OP_ROTARY_VISION,
    [PARITY_OP_ID_SIGMOID_GATE] = PARITY_OP_SIGMOID_GATE,
    [PARITY_OP_ID_SPLIT] = PARITY_OP_SPLIT,
    [PARITY_OP_ID_SWIGLU] = PARITY_OP_SWIGLU,
};

const char *parity_op_id_name(parity_op_id op) {
    return (unsigned)op < PARITY_OP_ID_COUNT && op_names[op] ? op_names[op] : "unknown op";
}

bool parity_op_id_find(const char *name, parity_op_id *out) {
    for (int op = 0; name && op < PARITY_OP_ID_COUNT; op++)
        if (op_names[op] && strcmp(op_names[op], name) == 0) {
            *out = (parity_op_id)op;
            return true;
        }
    return false;
}
