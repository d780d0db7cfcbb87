// ops_config.h: the resolved kernel-selection config, parity's OpsImplementationConfig. Built once
// from the raw settings (YAML + --ops) for a device, a sequence-parallel degree and a
// MODELING_BACKEND, it applies every rule of the seed at build time and collects every problem,
// not just the first:
//   - unknown fields ("not a kernel selection knob") and unknown values (naming the allowed ones);
//   - Ascend NPU normalization of values still equal to the GPU default, rejection of explicit
//     values not written for npu, and the GatedDeltaNet fields that are never auto-resolved;
//   - MODELING_BACKEND=veomni's rewrite of flash_attention_2/3/4 and flex_attention to their
//     sequence-parallel facades, and sp > 1 with an attention that cannot do SP;
//   - availability of every needed backend in the registry for the device.
// There is no fallback: a value that cannot run is reported, never swapped for eager.
#ifndef PARITY_CONFIG_OPS_CONFIG_H
#define PARITY_CONFIG_OPS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/config/fields.h"
#include "harness/config/modeling_backend.h"
#include "harness/config/ops_settings.h"
#include "ops/core/device.h"
#include "ops/core/error.h"
#include "ops/op_id.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PARITY_OPS_VALUE_MAX = 128,    // longest value accepted, with its terminator
    PARITY_OPS_NOTES_MAX = 512,
    PARITY_OPS_REASON_MAX = 256,
    PARITY_OPS_PROBLEM_MAX = 1024,
};

typedef enum parity_ops_status {
    PARITY_OPS_AVAILABLE = 0, // valid and runnable on the device
    PARITY_OPS_REJECTED,      // breaks a rule: unknown value, not for this device, no SP support...
    PARITY_OPS_UNAVAILABLE,   // valid but cannot run here ("not built yet", "needs SM90+, device is SM80")
    PARITY_OPS_NOT_NEEDED,    // valid; the caller's model does not use the op, availability not asked
    PARITY_OPS_NOT_CHECKED,   // valid; availability not asked (options.skip_availability)
} parity_ops_status;

// "available", "rejected", "unavailable", "not needed", "not checked".
const char *parity_ops_status_name(parity_ops_status status);

typedef struct parity_ops_selection {
    const parity_kernel_field *field;
    char requested[PARITY_OPS_VALUE_MAX]; // the value asked for; the default when nobody set one
    parity_ops_source source;             // default, YAML file:line, or --ops
    char backend[PARITY_OPS_VALUE_MAX];   // registry name after NPU normalization (for parity_registry_resolve)
    char resolved[PARITY_OPS_VALUE_MAX];  // what the model sees: `backend`, or VeOmni's SP facade name
    char notes[PARITY_OPS_NOTES_MAX];     // "NPU: default liger_kernel -> npu; ..."
    parity_ops_status status;
    char reason[PARITY_OPS_REASON_MAX];   // rejected/unavailable: a short why ("not built yet")
} parity_ops_selection;

typedef enum parity_ops_problem_kind {
    PARITY_OPS_PROBLEM_REJECTED = 0, // a rule was broken (exit 2: config error)
    PARITY_OPS_PROBLEM_UNAVAILABLE,  // a valid value cannot run here (exit 2, listed apart)
} parity_ops_problem_kind;

typedef struct parity_ops_problem {
    parity_ops_problem_kind kind;
    const parity_kernel_field *field;     // NULL for problems not tied to a field (unknown field, ...)
    char message[PARITY_OPS_PROBLEM_MAX]; // names the source, field, value and what is allowed
} parity_ops_problem;

typedef struct parity_ops_config_options {
    parity_device device;                 // default cuda:0 (VeOmni's defaults are GPU-oriented)
    int sequence_parallel_size;           // Ulysses degree; 1 = no sequence parallelism
    parity_modeling_backend modeling_backend; // default: from MODELING_BACKEND (unset = veomni)
    const parity_op_set *needed_ops;      // the ops the caller will run (a model's requirements);
                                          // NULL = every kernel-selection op
    bool skip_availability;               // validate and resolve only; never ask the registry
    bool vocabulary_only;                 // only known fields and values, each field set once: no device,
                                          // SP or availability rule (`parity run --ops`, whose combos
                                          // judge each device; status NOT_CHECKED)
} parity_ops_config_options;

typedef struct parity_ops_config {
    parity_device device;
    int sequence_parallel_size;
    parity_modeling_backend modeling_backend;      // effective: veomni or hf
    char modeling_backend_source[64];              // "default", "MODELING_BACKEND", "options"
    parity_ops_selection selections[PARITY_KERNEL_FIELD_COUNT]; // parity_kernel_fields order
    parity_ops_problem *problems;                  // every problem, in the order found
    size_t problem_count, problem_capacity;
    size_t rejected_count, unavailable_count;      // counted even when a problem could not be recorded
    size_t lost_problem_count;                     // problems dropped for lack of memory
} parity_ops_config;

// cuda:0, sp 1, MODELING_BACKEND from the environment, every op needed, availability checked.
parity_ops_config_options parity_ops_config_options_default(void);

// Builds, validates and resolves. `settings` may be NULL (all defaults); later settings override
// earlier ones (so YAML first, then --ops). `*config` is always filled (release it with
// parity_ops_config_release, also after an error). Returns NULL when every selection is valid and
// every needed backend is available; otherwise one error summarizing all problems: CONFIG when
// anything was rejected, UNAVAILABLE when only availability failed. config->problems has each.
parity_error *parity_ops_config_build(const parity_ops_settings *settings, const parity_ops_config_options *options,
                                      parity_ops_config *config);
void parity_ops_config_release(parity_ops_config *config);

// The selection for a field name, --ops alias or registry op name; NULL when none matches.
const parity_ops_selection *parity_ops_config_find(const parity_ops_config *config, const char *name);
// The registry backend name selected for `op` (e.g. "flash_attention_2" even when the model sees
// "veomni_flash_attention_2_with_sp"); NULL when the op has no field or its selection was rejected.
const char *parity_ops_config_backend(const parity_ops_config *config, const char *op);
// Every selected registry backend name by op, for parity_model_bind (models/model.h): ops without
// a field, or with a rejected selection, are NULL. The names point into `config`.
void parity_ops_config_op_names(const parity_ops_config *config, parity_op_names *out);

#ifdef __cplusplus
}
#endif
#endif
