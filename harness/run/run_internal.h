// run_internal.h: what the files of the runner (runner.h) share: the values a combo is compared on,
// the state of one (model, batch, dtype, device) group while it runs, and the compare, judge and
// jitter steps. run_plan.c plans, run_execute.c runs the plan, run_compare.c compares a step with
// the golden and judges it, run_jitter.c measures the jitter spread of a group's eager baseline.
#ifndef PARITY_RUN_INTERNAL_H
#define PARITY_RUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "golden/golden.h"
#include "harness/combos.h"
#include "harness/golden_case.h"
#include "harness/tolerance.h"
#include "models/model.h"
#include "reports/results.h"

// The values a combo is compared on, copied out of a step result.
typedef struct parity_run_values {
    double loss, aux_loss, grad_norm;
    bool has_aux_loss;
    size_t count;
    char (*names)[160];
    double *norms;
    char first_non_finite[192];
} parity_run_values;

void parity_run_values_release(parity_run_values *values);
parity_error *parity_run_values_copy(const parity_step_result *step, parity_run_values *out);
// Zeroed values with the names of `source` (for accumulating a spread).
parity_error *parity_run_values_copy_shape(const parity_run_values *source, parity_run_values *out);
// The golden's values, borrowed (never released).
void parity_run_values_from_golden(const parity_golden_values *golden, parity_run_values *out);
// The gradient norm of `name` in `values`, NAN when absent (index `hint` is tried first).
double parity_run_norm_named(const parity_run_values *values, const char *name, size_t hint);

// Fills the metrics of `result` and returns whether all pass.
parity_error *parity_run_compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_golden_values *golden_values,
                                 const parity_run_values *value, const parity_run_values *eager, const parity_run_values *spread,
                                 parity_combo_result *result);
// Status and reason from the metrics (the worst one names the failure).
void parity_run_judge(parity_combo_result *result, const parity_run_values *value);

typedef struct parity_run_group {
    bool baseline_ran, baseline_ok;
    char baseline_id[320];
    char baseline_problem[1024];
    parity_run_values eager;           // the baseline's values (eager_same_dtype)
    parity_run_values spread;          // per metric, the largest |jittered eager - eager| (names as eager's)
    bool has_spread;
} parity_run_group;

// The jitter spread of a group (harness/tolerance.h): eager again PARITY_JITTER_RUNS times with the
// embedding table nudged by rounding-level noise (seeds 1, 2, ...); per metric the largest distance
// from the unjittered eager. A jittered run that fails takes the baseline down with it (the combos
// of the group then report "no tolerance" with the reason), as a failed baseline does.
parity_error *parity_run_jitter_spread(const parity_combo_plan *plan, const parity_case *c, parity_run_group *group);

#endif
