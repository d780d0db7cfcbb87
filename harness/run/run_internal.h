// run_internal.h: what the files of the runner (runner.h) share: the state of one (model, batch,
// dtype, device) group while it runs, and the compare, judge and jitter steps, all on step results
// (models/step_result.h). run_plan.c plans, run_execute.c runs the plan, run_compare.c compares a step with
// the golden and judges it, run_jitter.c measures the jitter spread of a group's eager baseline.
#ifndef PARITY_RUN_INTERNAL_H
#define PARITY_RUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "golden/golden.h"
#include "harness/combos.h"
#include "harness/golden_case.h"
#include "harness/tolerance.h"
#include "models/step_result.h"
#include "reports/results.h"

// The jitter spread of a group's eager baseline (harness/tolerance.h): per metric, the largest
// distance of a jittered eager run from the unjittered one.
typedef struct parity_run_spread {
    parity_step_result values;     // |jittered - eager| per value, sketch components included (names as eager's)
    double *cosines;               // (values.parameter_count): |cos(jittered, golden) - cos(eager, golden)|
                                   // of each parameter's sketch (malloc'ed)
    double loss_input_cosine;      // the same for the loss input's sketch
} parity_run_spread;

void parity_run_spread_release(parity_run_spread *spread);

// Adds the metrics of `value` against `golden` to `result` under `rule` (`eager`: eager_same_dtype, or
// the golden's own eager values for a baseline; `spread`: NULL without a jitter spread). The parity
// rule compares, in this order: loss, aux_loss, grad_norm, then per parameter its gradient's norm
// ("grad_norm:<p>"), sketch components ("grad_sketch:<p>[j]", floored on the golden norm) and sketch
// cosine ("grad_cosine:<p>"), then the same three for the loss input when the golden has it
// ("...:loss_input"). The veomni rule compares loss and grad_norm only.
parity_error *parity_run_compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_step_result *golden,
                                 const parity_step_result *value, const parity_step_result *eager,
                                 const parity_run_spread *spread, parity_combo_result *result);
// Status and reason from the metrics (the worst one names the failure).
void parity_run_judge(parity_combo_result *result, const parity_step_result *value);

typedef struct parity_run_group {
    bool baseline_ran, baseline_ok;
    bool baseline_unsupported;         // refused by the layout (UNSUPPORTED / UNAVAILABLE under --parallel): so is the group
    char baseline_id[320];
    char baseline_problem[1024];
    parity_step_result eager;          // the baseline's values (eager_same_dtype)
    parity_run_spread spread;          // per metric, the largest |jittered eager - eager|
    bool has_spread;
} parity_run_group;

// The jitter spread of a group (harness/tolerance.h): eager again `runs` times (the suite's jitter_runs) with the
// embedding table nudged by rounding-level noise (seeds 1, 2, ...); per metric the largest distance
// from the unjittered eager (the cosines' against `golden`, the fp64 values). The largest of the
// sketch distances and cosines propagates NaN (a NaN spread is no spread: the eager error alone sets
// the tolerance). A jittered run that fails takes the baseline down with it (the combos of the group
// then report "no tolerance" with the reason), as a failed baseline does.
parity_error *parity_run_jitter_spread(const parity_combo_plan *plan, const parity_exec *exec, const parity_case *c,
                                       const parity_step_result *golden, int runs, parity_run_group *group);

#endif
