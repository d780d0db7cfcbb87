// op_id.h: the ops as an enum, so that what runs an op is found by index, never by comparing names.
// The registry stays keyed by name (a third party registers "rms_norm" like a built-in); the name
// of each id is its PARITY_OP_* string (ops/registry.h, ops/<op>/<op>.h), mapped once, in op_id.c.
// Kernel selection resolves into a table indexed by these ids before a model is built (the
// backend pointers of parity_bindings, ops/registry.h); a node call reads one slot of it.
#ifndef PARITY_OP_ID_H
#define PARITY_OP_ID_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_op_id {
    PARITY_OP_ID_ADD = 0,
    PARITY_OP_ID_ATTENTION,
    PARITY_OP_ID_BROADCAST_HEADS,
    PARITY_OP_ID_CAUSAL_CONV1D,
    PARITY_OP_ID_CONCAT,
    PARITY_OP_ID_CROSS_ENTROPY,
    PARITY_OP_ID_DSA_ATTENTION,
    PARITY_OP_ID_DSA_INDEXER,
    PARITY_OP_ID_EMBEDDING,
    PARITY_OP_ID_GATED_DELTA_RULE,
    PARITY_OP_ID_GDN_GATING,
    PARITY_OP_ID_L2_NORM,
    PARITY_OP_ID_LINEAR,
    PARITY_OP_ID_LOAD_BALANCING_LOSS,
    PARITY_OP_ID_MATMUL,
    PARITY_OP_ID_MHC,
    PARITY_OP_ID_MOE_EXPERTS,
    PARITY_OP_ID_MOE_ROUTER,
    PARITY_OP_ID_RMS_NORM,
    PARITY_OP_ID_RMS_NORM_GATED,
    PARITY_OP_ID_ROTARY,
    PARITY_OP_ID_ROTARY_VISION,
    PARITY_OP_ID_SIGMOID_GATE,
    PARITY_OP_ID_SPLIT,
    PARITY_OP_ID_SWIGLU,
    PARITY_OP_ID_COUNT
} parity_op_id;

// The registry name of `op` ("rms_norm"); "unknown op" outside the enum.
const char *parity_op_id_name(parity_op_id op);
// The id of a registry op name; false when no op of parity has that name.
bool parity_op_id_find(const char *name, parity_op_id *out);

// A set of ops, e.g. the ops a model calls.
typedef struct parity_op_set {
    bool contains[PARITY_OP_ID_COUNT];
} parity_op_set;

// A backend name per op, as kernel selection chose it (NULL: "eager"). The strings belong to
// whoever filled the table (a kernel-selection config, a planned combo) and outlive the binding.
typedef struct parity_op_names {
    const char *name[PARITY_OP_ID_COUNT];
} parity_op_names;

#ifdef __cplusplus
}
#endif
#endif
