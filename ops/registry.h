// registry.h: the op-backend registry, in the spirit of ggml-backend. A backend is one
// implementation of one op on one device type, keyed by (op, name, device), e.g.
// ("rms_norm", "liger_kernel", cuda). It carries capability flags, an availability probe that
// explains itself ("needs SM90+, device is SM80"), and the op-specific kernel table (forward and
// backward entry points, typed in ops/<op>/<op>.h). A third party adds a backend of an op that has
// a kernel-selection field with one call to parity_registry_add: the config accepts its name and
// the combos sweep it (harness/config/value_support.h reads the registry), with no edit to the
// vocabulary in harness/config/fields.c. An op without a field always runs its "eager" backend, and
// a new op needs its id in ops/op_id.h (and a field row to be selectable).
// parity_registry_check is the one answer to "can this backend run this call here": combo
// enumeration and the model binding both ask it; its result for each op a model calls is kept in
// parity_bindings, so a node call never looks a backend up.
#ifndef PARITY_REGISTRY_H
#define PARITY_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/device.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/op_id.h"

#ifdef __cplusplus
extern "C" {
#endif

// Capability flags: what a backend can do beyond the op's basic contract.
enum parity_capability {
    PARITY_CAP_VARLEN = 1u << 0,              // packed rows through cu_seqlens
    PARITY_CAP_GQA = 1u << 1,                 // fewer kv heads than query heads
    PARITY_CAP_PARTIAL_ROTARY = 1u << 2,      // partial_rotary_factor < 1
    PARITY_CAP_SEQUENCE_PARALLEL = 1u << 3,   // safe on head shards under Ulysses sequence parallelism
                                              // (models/parallel/ulysses.c; each claim has a layout test:
                                              // suites/tests/test_capability_claims.c)
    PARITY_CAP_EXPERT_PARALLEL = 1u << 4,     // safe on an expert shard's dispatched tokens (expert_parallel.c)
    PARITY_CAP_SLIDING_WINDOW = 1u << 5,
    PARITY_CAP_OFFSET_WEIGHT = 1u << 6,       // (1 + w) RMSNorm variant
    PARITY_CAP_BATCH_INVARIANT = 1u << 7,     // results independent of batch composition (every claim proven by
                                              // suites/tests/test_capability_claims.c)
    PARITY_CAP_DETERMINISTIC = 1u << 8,       // bitwise reproducible run to run
    PARITY_CAP_FUSED_LINEAR = 1u << 9,        // cross-entropy that takes hidden states + lm_head weight
    PARITY_CAP_TEST_ONLY = 1u << 10,          // deliberately wrong backends that prove the harness can see
    PARITY_CAP_BLOCK_MASK = 1u << 11,         // attention that runs on a model-provided block mask
                                              // (ops/attention/block_mask.h): its callers pass args.block_mask
};

typedef struct parity_backend parity_backend;

// Returns true when usable on `info`'s device; otherwise writes the reason into `reason`.
// The registry has already checked the device type and min_compute_capability.
typedef bool (*parity_backend_probe)(const parity_backend *backend, const parity_device_info *info, char *reason,
                                     size_t reason_size);

struct parity_backend {
    const char *op;                 // "rms_norm", "attention", ... (PARITY_OP_* names below)
    const char *name;               // VeOmni value name: "eager", "liger_kernel", ...
    parity_device_type device;
    uint32_t dtypes;                // PARITY_DTYPE_BIT mask of supported dtypes
    uint32_t capabilities;          // parity_capability flags
    int min_compute_capability;     // CUDA only, e.g. 90 for SM90+; 0 = any
    parity_backend_probe probe;     // NULL = available whenever the device is
    const void *kernels;            // op-specific table of forward/backward entry points
    const char *description;        // one line for `parity list backends`
    const char *origin;             // "builtin" or the registering module, e.g. "deepseek_v3 extra_backends"
};

// Op names (the registry keys; their ids are in ops/op_id.h). Ops without a kernel-selection field
// (linear, embedding, ...) use the backend named "eager" on each device.
#define PARITY_OP_ATTENTION "attention"
#define PARITY_OP_DSA_INDEXER "dsa_indexer"
#define PARITY_OP_DSA_ATTENTION "dsa_attention"
#define PARITY_OP_MHC "mhc"
#define PARITY_OP_CROSS_ENTROPY "cross_entropy"
#define PARITY_OP_RMS_NORM "rms_norm"
#define PARITY_OP_SWIGLU "swiglu"
#define PARITY_OP_ROTARY "rotary"
#define PARITY_OP_ROTARY_VISION "rotary_vision"
#define PARITY_OP_RMS_NORM_GATED "rms_norm_gated"
#define PARITY_OP_CAUSAL_CONV1D "causal_conv1d"
#define PARITY_OP_GATED_DELTA_RULE "gated_delta_rule"
#define PARITY_OP_LOAD_BALANCING_LOSS "load_balancing_loss"
#define PARITY_OP_MOE_EXPERTS "moe_experts"

// Registers a copy of `backend` (strings are copied too). Rejects a duplicate (op, name, device),
// a missing op/name, or an unknown device type, naming the backend.
parity_error *parity_registry_add(const parity_backend *backend);
// Removes every registration (tests); built-ins come back with parity_registry_register_builtins.
void parity_registry_clear(void);
// Removes the registrations made after the first `count` (a plugin refused at load leaves none behind).
void parity_registry_truncate(size_t count);
// Sets the origin of every registration after the first `from` (a plugin's backends: "plugin PATH").
parity_error *parity_registry_set_origin(size_t from, const char *origin);
// Registers every backend built into this binary (idempotent).
parity_error *parity_registry_register_builtins(void);

const parity_backend *parity_registry_find(const char *op, const char *name, parity_device_type device);
size_t parity_registry_count(void);
const parity_backend *parity_registry_at(size_t index); // registration order
// True when some device has a backend of that name for the op.
bool parity_registry_has_name(const char *op, const char *name);

typedef enum parity_availability {
    PARITY_AVAILABLE = 0,
    PARITY_NOT_REGISTERED,       // nothing of that (op, name, device) in this build
    PARITY_DEVICE_ABSENT,        // no such device on this machine
    PARITY_DEVICE_TOO_OLD,       // below min_compute_capability
    PARITY_PROBE_REFUSED,        // the backend's own probe said no
    PARITY_DTYPE_UNSUPPORTED,    // runs here, but not in the dtype asked for
    PARITY_CAPABILITY_MISSING,   // runs here, but lacks a capability the caller needs
} parity_availability;

// What a caller needs from a backend beyond its being usable on the device.
typedef struct parity_backend_need {
    parity_dtype dtype;          // the dtype of the calls
    uint32_t capabilities;       // parity_capability flags the calls need (a model's variant of the op)
} parity_backend_need;

typedef struct parity_backend_check {
    parity_availability verdict;
    const parity_backend *backend; // the registered entry (NULL when none is registered)
    uint32_t missing;              // PARITY_CAPABILITY_MISSING: the capabilities the backend lacks
    char reason[256];              // verdict != PARITY_AVAILABLE: why ("needs SM90+, device is SM80",
                                   // "does not support bf16", "does not support partial rotary")
} parity_backend_check;

// The checker: whether (op, name) can run on `device` here, in need->dtype, with every capability
// in need->capabilities. Checked in this order: registered, device present (`info` may be NULL: the
// device is queried), compute capability, the backend's probe, dtype, capabilities; the first that
// fails is the verdict, with its reason. `need` NULL: availability only.
parity_availability parity_registry_check(const char *op, const char *name, parity_device device,
                                          const parity_device_info *info, const parity_backend_need *need,
                                          parity_backend_check *out);

// parity_registry_check without a need, its reason copied into `reason` ("needs SM90+, device is
// SM80", "no CUDA device present", ...).
parity_availability parity_registry_availability(const char *op, const char *name, parity_device device,
                                                 const parity_device_info *info, char *reason, size_t reason_size);

// The kernel table of an available backend, or an error that says why it cannot be used.
parity_error *parity_registry_resolve(const char *op, const char *name, parity_device device,
                                      const parity_backend **out);

// "partial rotary, (1 + w) offset weight": the names of the capability flags in `capabilities`.
const char *parity_capability_names(uint32_t capabilities, char *buffer, size_t size);

// The backend of every op a model calls, resolved once before the model is built (a NULL slot: the
// op is not bound). Indexed by parity_op_id; node calls read it, nothing compares names at run time.
typedef struct parity_bindings {
    const parity_backend *backend[PARITY_OP_ID_COUNT];
} parity_bindings;

#ifdef __cplusplus
}
#endif
#endif
