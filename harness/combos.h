// combos.h: the combinations `parity run` runs for one (model, batch, dtype, device) of a suite.
//
// The model is known by its requirements (models/model.h), computed once per model by the caller.
// Product mode (no `modes:` in the suite): for every swept kernel-selection field the model
// actually calls (an unused field never multiplies the matrix; the suite's `sweep:` narrows the
// fields, by default every used one), the values that are registered, available on the device,
// support the dtype and have every capability the model needs from that op (one verdict of
// parity_kernel_value_check: the vocabulary, then parity_registry_check, the checker the model
// binding asks too); the product of those, in vocabulary order, the all-eager baseline first. Every other value of a swept field gets one
// not_supported combo (that value, every other swept field eager) carrying the reason ("not
// supported on cpu", "not built yet", "needs SM90+, device is SM80", "does not support partial
// rotary (...)"). Modes (`modes:`): the suite's explicit combinations instead (VeOmni's attention x
// MoE modes); a mode's choices for ops the model never calls are dropped, a mode whose `requires`
// fields the model does not call does not apply, and the first applicable mode must be all eager
// (the reference). Two modes that end up with the same choices for a model stay two combos (their
// ids differ by mode backend, or the later one is reported as a duplicate in its reason).
// Fields fixed with --ops hold their value in every combo except the eager baseline.
// Exclusions mark combos excluded with the suite's reason. Test-only backends
// (PARITY_CAP_TEST_ONLY) join only when asked for.
//
// Ids are stable and readable: <model>/<batch>/<alias>=<value>,.../<dtype>/<device>, e.g.
// qwen3_tiny/plain/attn=sdpa,ce=chunk_loss,rms_norm=eager,rope=eager,swiglu=eager/bf16/cpu;
// every swept field is listed, in vocabulary order, with its --ops alias.
#ifndef PARITY_COMBOS_H
#define PARITY_COMBOS_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/config/ops_settings.h"
#include "harness/suite.h"
#include "models/model.h"
#include "reports/results.h"

typedef struct parity_combo_plan {
    char id[320];
    const parity_suite_model *model;
    const parity_suite_batch *batch;
    parity_dtype dtype;
    parity_device device;
    const parity_kernel_field *fields[PARITY_KERNEL_FIELD_COUNT]; // the combo's choices, vocabulary order
    char values[PARITY_KERNEL_FIELD_COUNT][64];
    size_t choice_count;
    char mode[128];               // the suite mode it came from ("" in product mode)
    char backend[16];             // the mode's modeling backend ("" when none)
    bool is_baseline;             // the all-eager reference of its (model, batch, dtype, device)
    parity_combo_status status;   // PASS = to run; NOT_SUPPORTED or EXCLUDED with `reason`
    char reason[512];
} parity_combo_plan;

typedef struct parity_combo_list {
    parity_combo_plan *items;
    size_t count, capacity;
} parity_combo_list;

typedef struct parity_combo_options {
    bool with_test_backends;      // include PARITY_CAP_TEST_ONLY values
    const parity_ops_settings *fixed; // --ops: fields pinned for every non-baseline combo (may be NULL)
} parity_combo_options;

// Appends the combos of (model, batch, dtype, device) to `out`. CONFIG error for a suite mistake
// that only shows here (an exclusion that hits the baseline, a first mode that is not all eager,
// an --ops field that is not a field).
parity_error *parity_combos_enumerate(const parity_suite *suite, const parity_suite_model *model,
                                      const parity_model_requirements *requirements, const parity_suite_batch *batch,
                                      parity_dtype dtype, parity_device device, const parity_combo_options *options,
                                      parity_combo_list *out);
void parity_combo_list_release(parity_combo_list *list);

// The combo's value for `field` ("eager" when the combo does not set it).
const char *parity_combo_value(const parity_combo_plan *plan, const parity_kernel_field *field);

// The combo's choices as a backend name per op, for parity_model_bind (unset ops: NULL, "eager").
// The names point into `plan`.
void parity_combo_op_names(const parity_combo_plan *plan, parity_op_names *out);

#endif
