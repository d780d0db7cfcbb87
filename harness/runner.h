// runner.h: `parity run` without the command line: plan the combos of a suite (devices, dtypes,
// models, batches, --filter), then run them: every selected combo, and the eager baseline of each
// (model, batch, dtype, device) group (always, because the tolerances derive from it), comparing
// loss, aux_loss, grad_norm and per-parameter gradient norms with the golden under the suite's
// rule (tolerance.h), timing warm-up + repeats, and recording everything in a parity_results.
// A failing combo never stops the run; a stop request (a signal, options.stop) does, between combos:
// the results then hold the combos that finished and say so. Goldens are read and checked against
// the suite before anything runs: a missing, corrupt or stale golden is a DATA/IO error naming the file.
// The code is in harness/run/: run_plan.c, run_execute.c, run_compare.c, run_jitter.c.
#ifndef PARITY_RUNNER_H
#define PARITY_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "harness/combos.h"
#include "harness/golden_case.h"
#include "harness/suite.h"
#include "reports/results.h"

typedef struct parity_run_options {
    const char *golden_dir;            // where golden/<suite>/... lives (default "golden")
    const char *model;                 // --model: only this model (NULL = every model)
    const char *device;                // --device: cpu | cuda | best instead of the suite's devices
    const char *dtype;                 // --dtype: fp64 | fp32 | bf16 instead of the suite's dtypes
    const char *filter;                // --filter: fnmatch glob on combo ids
    const parity_ops_settings *fixed;  // --ops: fields pinned in every non-baseline combo
    bool with_test_backends;           // include PARITY_CAP_TEST_ONLY backends in the matrix
    bool listing;                      // --list: plan only (absent devices allowed, no goldens)
    FILE *progress;                    // progress output (NULL = silent)
    bool terminal;                     // progress is a terminal: one '\r'-updated line
    int argc;                          // the command line, for provenance
    char **argv;
    const volatile sig_atomic_t *stop; // nonzero (the number of the signal that asked): stop before the
                                       // next combo, keeping those that finished (NULL: never asked)
    // --parallel: every combo, baseline and jittered run under this layout instead of the suite's
    // `parallel:` list (models/parallel/layout.h). Under a layout every rank runs the same plan in the
    // same order; the layout's name is the combo ids' last segment ("/dp2", "/sp2ep2"); a stop asked
    // on any rank stops every rank before the same combo.
    parity_layout layout;
    bool has_layout;
} parity_run_options;

// The ranks a run of `suite` needs: the largest of its layouts' (or options->layout's), 1 for none.
int parity_run_ranks_needed(const parity_suite *suite, const parity_run_options *options);


typedef struct parity_run_plan {
    parity_combo_list combos;          // every combo, grouped; each group's baseline first
    bool *selected;                    // per combo: matches --filter
    size_t *case_index;                // per combo: its (model, batch) case
    parity_case *cases;
    size_t case_count;
    parity_device devices[PARITY_SUITE_MAX_DEVICES];
    size_t device_count;
    size_t selected_count;
} parity_run_plan;

// USAGE for a bad --model/--device/--dtype or a --filter no combo matches, CONFIG for suite problems (ranks > 1 included),
// DEVICE when a requested device is absent (not when listing).
parity_error *parity_run_plan_build(const parity_suite *suite, const parity_run_options *options, parity_run_plan *out);
void parity_run_plan_release(parity_run_plan *plan);

// Runs the plan into `results` (context filled; one record per selected combo, or, when *options->stop
// turned nonzero, per selected combo that finished before it: context.interrupted names the signal).
parity_error *parity_run_execute(const parity_suite *suite, const parity_run_plan *plan, const parity_run_options *options,
                                 parity_results *results);

#endif
